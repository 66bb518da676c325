// The profiling layer on real recordings: lab-tiny generations on the CPU backend,
// recorded by a Trace, analysed, and written to and read from a Chrome trace.
#include <catch2/catch.hpp>

#include "profiling/model/analysis.h"
#include "profiling/trace/chrome_trace.h"
#include "tests/support/engine_fixtures.h"
#include "tests/support/profiling_fixtures.h"

using namespace decodelab;

namespace {

struct Recorded {
  Trace trace;
  GenerationResult result;
};

Recorded record(const decodelab::testing::GenerationCase& test_case) {
  Recorded recorded;
  recorded.trace.metadata().backend = "cpu";
  recorded.trace.metadata().device_spec = decodelab::testing::synthetic_cpu_device();
  recorded.result = decodelab::testing::generate_on_cpu(test_case, &recorded.trace);
  return recorded;
}

}  // namespace

TEST_CASE("a recorded generation: every op timed, one step range per decode step", "[profiling][engine]") {
  decodelab::testing::GenerationCase test_case;
  test_case.workload.requests = 2;
  test_case.workload.batch_size = 2;
  test_case.workload.prompt_tokens = 8;
  test_case.workload.new_tokens = 6;

  const Recorded recorded = record(test_case);
  const RunAnalysis analysis = analyze(recorded.trace);

  CHECK(recorded.trace.unmatched_timings() == 0);
  CHECK(analysis.ops_without_timing == 0);
  CHECK(analysis.steps.size() == recorded.result.timing.step_ms.size());
  REQUIRE(analysis.phase(Phase::Prefill));
  REQUIRE(analysis.phase(Phase::Decode));
  CHECK(analysis.phase(Phase::Decode)->timeline.syncs == 0);  // the fixed path reads tokens once, at the end
  CHECK(analysis.timeline.syncs >= 1);
  CHECK(analysis.timeline.busy_seconds > 0);
  // every decode step runs the same ops
  for (const StepStats& step : analysis.steps) CHECK(step.timeline.ops == analysis.steps.front().timeline.ops);
  // matmuls are there and carry work
  bool found_matmul = false;
  for (const OpGroup& group : analysis.categories) {
    if (group.category == OpCategory::Matmul && group.phase == Phase::Decode) {
      found_matmul = true;
      CHECK(group.point.flops > 0);
      CHECK(group.point.bytes > 0);
    }
  }
  CHECK(found_matmul);
}

TEST_CASE("a host sync in the loop shows as syncs inside the steps", "[profiling][engine]") {
  decodelab::testing::GenerationCase test_case;
  test_case.workload.prompt_tokens = 4;
  test_case.workload.new_tokens = 5;
  test_case.bugs.host_sync = true;
  test_case.bugs.host_sync_per = HostSyncPer::Token;

  const RunAnalysis analysis = analyze(record(test_case).trace);
  REQUIRE(analysis.phase(Phase::Decode));
  CHECK(analysis.phase(Phase::Decode)->timeline.syncs >= static_cast<int64_t>(analysis.steps.size()));
  for (const StepStats& step : analysis.steps) CHECK(step.timeline.syncs >= 1);
}

TEST_CASE("a recorded trace survives a Chrome trace round trip", "[profiling][engine][chrome_trace]") {
  decodelab::testing::GenerationCase test_case;
  test_case.workload.prompt_tokens = 4;
  test_case.workload.new_tokens = 3;
  const Recorded recorded = record(test_case);

  const Trace loaded = parse_chrome_trace(chrome_trace_json(recorded.trace).dump(), "recorded.json");
  CHECK(loaded == recorded.trace);
  CHECK(to_json(analyze(loaded)) == to_json(analyze(recorded.trace)));
}
