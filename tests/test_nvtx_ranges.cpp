// The engine's ranges (run, group, prefill, step, layer) as an Nsight timeline shows them:
// one name per range, shared by the NVTX range, the trace and the Chrome trace, and ranges
// that nest, so every NVTX push the engine makes is popped in order. (CPU builds compile
// NVTX out; the names and the nesting are what these tests can hold.)
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "profiling/trace/chrome_trace.h"
#include "profiling/trace.h"
#include "tests/support/engine_fixtures.h"

using namespace decodelab;
using namespace decodelab::testing;

TEST_CASE("nvtx ranges: the names the timeline shows", "[nvtx_ranges]") {
  CHECK(range_name(RangeKind::Run, -1) == "run");
  CHECK(range_name(RangeKind::Group, 0) == "group 0");
  CHECK(range_name(RangeKind::Prefill, 2) == "prefill 2");
  CHECK(range_name(RangeKind::Step, 17) == "step 17");
  CHECK(range_name(RangeKind::Layer, 31) == "layer 31");
}

TEST_CASE("nvtx ranges: a generation's ranges nest and carry the trace's names", "[nvtx_ranges]") {
  // prepare: two groups of two sequences, four decode steps each, recorded by a Trace
  GenerationCase test_case;
  test_case.workload.requests = 4;
  test_case.workload.batch_size = 2;
  test_case.workload.prompt_tokens = 5;
  test_case.workload.new_tokens = 5;
  Trace trace;

  // run
  generate_on_cpu(test_case, &trace);
  const nlohmann::json chrome = chrome_trace_json(trace);

  // verify: every range closed inside its parent (pushes and pops pair, innermost first)
  const auto& ranges = trace.ranges();
  std::map<std::string, int> counts;
  for (const TraceRange& range : ranges) {
    REQUIRE(range.closed());
    ++counts[range_kind_name(range.kind)];
    if (range.parent >= 0) {
      const TraceRange& parent = ranges[static_cast<size_t>(range.parent)];
      CHECK(parent.begin_ns <= range.begin_ns);
      CHECK(range.end_ns <= parent.end_ns);
    }
  }
  CHECK(counts["run"] == 1);
  CHECK(counts["group"] == 2);
  CHECK(counts["prefill"] == 2);
  CHECK(counts["step"] == 2 * 4);
  CHECK(counts["layer"] == (2 + 2 * 4) * test_case.config.num_hidden_layers);

  // ... and the Chrome trace names each range as NVTX does
  std::map<std::string, int> named;
  for (const auto& event : chrome["traceEvents"]) {
    if (event.value("cat", "") == "range") ++named[event["name"].get<std::string>()];
  }
  for (const TraceRange& range : ranges) CHECK(named.count(range_name(range.kind, range.index)) == 1);
  CHECK(named["step 4"] == 2);  // one per group
}
