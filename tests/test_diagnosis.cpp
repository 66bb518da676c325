// Blind diagnosis on real recordings: lab-tiny scenarios run in-process on the CPU backend
// through the runner, recorded into a Trace, written to a Chrome trace file and read back
// (the CLI's path), then diagnosed. Every case must report exactly the bugs switched on,
// except the documented cases the trace cannot tell apart (docs/diagnosis.md):
// sequential generation with one request (nothing to batch) is not reported, and
// batch 1 with several requests reads as sequential generation and is reported.
#include <catch2/catch.hpp>

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <random>
#include <set>
#include <sstream>

#include "engine/backend.h"
#include "lab/run/runner.h"
#include "lab/scenario/scenario.h"
#include "profiling/trace/chrome_trace.h"
#include "profiling/diagnosis/diagnosis.h"
#include "profiling/diagnosis/trace_outline.h"
#include "tests/support/profiling_fixtures.h"
#include "tests/support/temp_dir.h"

using namespace decodelab;

namespace {

struct DiagnosisCase {
  std::string dtype = "fp16";
  int requests = 4;
  int batch_size = 4;
  int prompt_tokens = 8;
  int new_tokens = 8;
  int repeats = 1;
  BugSet bugs;

  std::string describe() const {
    std::ostringstream text;
    text << "lab-tiny " << dtype << ", requests " << requests << ", batch " << batch_size << ", prompt "
         << prompt_tokens << ", new " << new_tokens << ", repeats " << repeats << ", bugs " << bugs.describe();
    return text.str();
  }
};

Scenario scenario_of(const DiagnosisCase& test_case) {
  std::ostringstream yaml;
  yaml << "model: lab-tiny\ndtype: " << test_case.dtype << "\nbackend: cpu\nworkload:\n  requests: "
       << test_case.requests << "\n  batch_size: " << test_case.batch_size << "\n  prompt_tokens: "
       << test_case.prompt_tokens << "\n  new_tokens: " << test_case.new_tokens
       << "\n  seed: 3\nrun: {warmup: 0, repeats: " << test_case.repeats << "}\n";
  Scenario scenario = parse_scenario(YAML::Load(yaml.str()), "diagnosis-case.yaml");
  scenario.bugs = test_case.bugs;  // the variants are set directly; fp32_ops only comes with a half dtype
  return scenario;
}

Backend& cpu_backend() {
  static const std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, {});
  return *backend;
}

// Run, record, write the Chrome trace, read it back: what `run --trace` then `diagnose` do.
Trace recorded_trace(const DiagnosisCase& test_case) {
  const Scenario scenario = scenario_of(test_case);
  Trace recorded;
  recorded.metadata().backend = cpu_backend().name();
  recorded.metadata().device = cpu_backend().device_description();
  recorded.metadata().dtype = dtype_name(scenario.dtype);
  recorded.metadata().model = ModelShape::of(scenario.model_config);
  RunOptions options;
  options.sink = &recorded;
  run_scenario(scenario, options, &cpu_backend());
  const decodelab::testing::TempDir dir;
  write_chrome_trace(recorded, dir.path() / "trace.json");
  return read_chrome_trace(dir.path() / "trace.json");
}

// What a reading can tell: the bugs switched on, with the two documented exceptions.
std::vector<std::string> expected_findings(const DiagnosisCase& test_case) {
  const BugSet& bugs = test_case.bugs;
  const int group = bugs.sequential_generation ? 1 : std::min(test_case.batch_size, test_case.requests);
  const bool served_one_at_a_time = test_case.requests > 1 && group == 1;
  std::vector<std::string> names;
  if (bugs.no_kv_cache) names.push_back("no_kv_cache");
  if (bugs.non_contiguous) names.push_back("non_contiguous");
  if (bugs.host_sync) names.push_back("host_sync");
  if (bugs.fp32_ops) names.push_back("fp32_ops");
  if (served_one_at_a_time) names.push_back("sequential_generation");
  return names;
}

std::vector<std::string> found_names(const Diagnosis& diagnosis) {
  std::vector<std::string> names;
  for (const Finding& finding : diagnosis.bugs) names.push_back(finding.name);
  return names;
}

void check_diagnosis(const DiagnosisCase& test_case) {
  const Diagnosis diagnosis = diagnose(recorded_trace(test_case));
  INFO(test_case.describe());
  INFO(format_diagnosis(diagnosis));
  CHECK(found_names(diagnosis) == expected_findings(test_case));
  for (const Finding& finding : diagnosis.bugs) {
    CHECK(!finding.evidence.empty());
    CHECK(finding.confidence > 0.5);
    CHECK(finding.confidence <= 1.0);
  }
  if (diagnosis.bugs.empty()) CHECK(format_diagnosis(diagnosis).find("no bugs found") != std::string::npos);
}

// The trace of the same generation with its decode steps replayed as a captured graph (a
// backend with graphs, engine/model/generator.cpp): each step's ops and layer ranges are captured
// rather than described, and one "graph_replay" op stands for them.
Trace as_graph_replayed(const Trace& eager) {
  std::vector<const TraceRange*> steps;
  for (const TraceRange& range : eager.ranges())
    if (range.kind == RangeKind::Step) steps.push_back(&range);
  auto step_at = [&steps](int64_t ns) -> const TraceRange* {
    for (const TraceRange* step : steps)
      if (step->contains(ns)) return step;
    return nullptr;
  };
  Trace replayed;
  replayed.metadata() = eager.metadata();
  for (const TraceRange& range : eager.ranges()) {
    if (range.kind == RangeKind::Layer && step_at(range.begin_ns)) continue;
    replayed.add_range(range.kind, range.index, range.begin_ns, range.end_ns, range.depth);
  }
  std::set<const TraceRange*> replayed_steps;
  for (const TraceOp& op : eager.ops()) {
    const TraceRange* step = step_at(op.host_begin_ns);
    const bool captured = step && op.desc.category != OpCategory::Marker && op.desc.category != OpCategory::Memcpy;
    if (captured && !replayed_steps.insert(step).second) continue;
    OpDesc desc = op.desc;
    if (captured) desc = decodelab::testing::op(op.desc.id, "graph_replay", "decode_step", OpCategory::Other, {}, {});
    replayed.add_op(desc, op.host_begin_ns, op.host_end_ns, op.device_begin_ns, op.device_end_ns);
  }
  for (const HostCall& call : eager.host_calls()) replayed.host_call(call);
  return replayed;
}

BugSet bugs_from_mask(unsigned mask) {
  BugSet bugs;
  bugs.no_kv_cache = mask & 1u;
  bugs.non_contiguous = mask & 2u;
  bugs.host_sync = mask & 4u;
  bugs.fp32_ops = mask & 8u;
  bugs.sequential_generation = mask & 16u;
  return bugs;
}

}  // namespace

TEST_CASE("diagnosis: the outline of a recorded trace has its runs, groups and steps", "[diagnosis]") {
  DiagnosisCase test_case;
  test_case.requests = 5;
  test_case.batch_size = 2;
  test_case.new_tokens = 6;
  test_case.repeats = 2;
  const TraceOutline outline = outline_trace(recorded_trace(test_case));

  REQUIRE(outline.runs.size() == 2);
  for (const RunOutline& run : outline.runs) {
    REQUIRE(run.groups.size() == 3);  // 2 + 2 + 1
    for (const GroupOutline& group : run.groups) {
      REQUIRE(group.passes.size() == 6);  // one prefill, then new_tokens - 1 steps
      CHECK(group.passes.front().prefill);
      CHECK(group.passes.back().step == 5);
      for (const PassOutline& pass : group.passes) CHECK(!pass.ops.empty());
    }
  }
  CHECK(outline.decode_steps() == 2 * 3 * 5);
}

TEST_CASE("diagnosis: an outline fills in the run and group a hand-made trace lacks", "[diagnosis]") {
  Trace trace;
  trace.add_range(RangeKind::Step, 1, 100, 200, 0);
  trace.add_range(RangeKind::Step, 2, 300, 400, 0);
  trace.add_op(decodelab::testing::matmul(1, 1, 64, 64, DType::F16), 110, 120, 130, 140);
  trace.add_op(decodelab::testing::matmul(2, 1, 64, 64, DType::F16), 250, 260, 270, 280);  // between the steps
  trace.add_op(decodelab::testing::matmul(3, 1, 64, 64, DType::F16), 310, 320, 330, 340);
  trace.host_call(HostCall{HostCallKind::DeviceToHost, "memcpy_dtoh", 350, 360, 4});

  const TraceOutline outline = outline_trace(trace);
  REQUIRE(outline.runs.size() == 1);
  REQUIRE(outline.runs[0].groups.size() == 1);
  const std::vector<PassOutline>& passes = outline.runs[0].groups[0].passes;
  REQUIRE(passes.size() == 2);
  CHECK(passes[0].ops == std::vector<size_t>{0});
  CHECK(passes[1].ops == std::vector<size_t>{2});
  CHECK(passes[1].calls == std::vector<size_t>{0});
  CHECK(passes[1].op_layers == std::vector<int>{-1});
}

TEST_CASE("diagnosis: all 32 combinations of the five bugs, default variants", "[diagnosis][slow]") {
  for (unsigned mask = 0; mask < 32; ++mask) {
    DiagnosisCase test_case;
    test_case.bugs = bugs_from_mask(mask);
    check_diagnosis(test_case);
  }
}

TEST_CASE("diagnosis: each variant is named by the form its signal takes", "[diagnosis]") {
  struct VariantCase {
    const char* name;
    const char* variant;
    void (*apply)(BugSet&);
  };
  const VariantCase cases[] = {
      {"non_contiguous", "copy", [](BugSet& b) { b.non_contiguous = true, b.non_contiguous_mode = NonContiguousMode::Copy; }},
      {"non_contiguous", "strided", [](BugSet& b) { b.non_contiguous = true, b.non_contiguous_mode = NonContiguousMode::Strided; }},
      {"host_sync", "token", [](BugSet& b) { b.host_sync = true, b.host_sync_per = HostSyncPer::Token; }},
      {"host_sync", "layer", [](BugSet& b) { b.host_sync = true, b.host_sync_per = HostSyncPer::Layer; }},
      {"host_sync", "sequence", [](BugSet& b) { b.host_sync = true, b.host_sync_per = HostSyncPer::Sequence; }},
      {"fp32_ops", "norms", [](BugSet& b) { b.fp32_ops = true, b.fp32_scope = Fp32Scope::Norms; }},
      {"fp32_ops", "matmuls", [](BugSet& b) { b.fp32_ops = true, b.fp32_scope = Fp32Scope::Matmuls; }},
      {"fp32_ops", "all", [](BugSet& b) { b.fp32_ops = true, b.fp32_scope = Fp32Scope::All; }},
  };
  for (const VariantCase& variant : cases) {
    DiagnosisCase test_case;
    test_case.requests = test_case.batch_size = 3;  // per sequence differs from per token
    test_case.dtype = "bf16";
    variant.apply(test_case.bugs);
    const Diagnosis diagnosis = diagnose(recorded_trace(test_case));
    INFO(test_case.describe() << "\n" << format_diagnosis(diagnosis));
    REQUIRE(diagnosis.bugs.size() == 1);
    CHECK(diagnosis.bugs.front().name == variant.name);
    CHECK(diagnosis.bugs.front().variant == variant.variant);
  }

  // Uneven groups (2, 2, 1): most steps read once per sequence of their group.
  DiagnosisCase uneven;
  uneven.requests = 5;
  uneven.batch_size = 2;
  uneven.bugs.host_sync = true;
  uneven.bugs.host_sync_per = HostSyncPer::Sequence;
  const Diagnosis diagnosis = diagnose(recorded_trace(uneven));
  REQUIRE(diagnosis.bugs.size() == 1);
  CHECK(diagnosis.bugs.front().variant == "sequence");
}

// DECODELAB_DIAGNOSIS_SOAK=N runs N samples at the full lengths (8..256 tokens, no step
// budget) instead of the quick sample: minutes, for a change to the checks.
TEST_CASE("diagnosis: a seeded random sample of workloads, variants and dtypes", "[diagnosis][slow]") {
  const char* soak = std::getenv("DECODELAB_DIAGNOSIS_SOAK");
  const int samples = soak ? std::atoi(soak) : 16;
  const int longest = soak ? 256 : 64;
  // A trace costs ~0.7 kB per op to write and read back: the quick sample shortens
  // generations to at most this many decode steps per trace (never below 8 tokens).
  const int step_budget = soak ? 1 << 20 : 80;
  std::mt19937_64 random(20240611);
  auto between = [&random](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  for (int sample = 0; sample < samples; ++sample) {
    DiagnosisCase test_case;
    test_case.bugs = bugs_from_mask(static_cast<unsigned>(between(0, 31)));
    test_case.bugs.non_contiguous_mode = between(0, 1) ? NonContiguousMode::Copy : NonContiguousMode::Strided;
    test_case.bugs.host_sync_per = static_cast<HostSyncPer>(between(0, 2));
    test_case.bugs.fp32_scope = static_cast<Fp32Scope>(between(0, 2));
    const char* dtypes[] = {"fp32", "fp16", "bf16"};
    test_case.dtype = dtypes[between(test_case.bugs.fp32_ops ? 1 : 0, 2)];
    test_case.requests = between(1, 16);
    test_case.batch_size = between(1, 16);
    test_case.prompt_tokens = between(8, longest);
    test_case.new_tokens = between(8, longest);
    test_case.repeats = between(1, 4) == 4 ? 2 : 1;
    const int groups = test_case.bugs.sequential_generation
                           ? test_case.requests
                           : (test_case.requests + test_case.batch_size - 1) / test_case.batch_size;
    test_case.new_tokens = std::max(8, std::min(test_case.new_tokens, step_budget / (groups * test_case.repeats) + 1));
    check_diagnosis(test_case);
  }
}

TEST_CASE("diagnosis: decode steps replayed as a graph are read from the prefills", "[diagnosis]") {
  // The bugs a captured step can hold: a strided cache, fp32 ops, sequential generation.
  for (unsigned subset = 0; subset < 8; ++subset) {
    DiagnosisCase test_case;
    test_case.requests = test_case.batch_size = 3;
    test_case.bugs.non_contiguous = subset & 1u;
    test_case.bugs.non_contiguous_mode = NonContiguousMode::Strided;
    test_case.bugs.fp32_ops = subset & 2u;
    test_case.bugs.fp32_scope = Fp32Scope::All;
    test_case.bugs.sequential_generation = subset & 4u;
    const Diagnosis diagnosis = diagnose(as_graph_replayed(recorded_trace(test_case)));
    INFO(test_case.describe() << "\n" << format_diagnosis(diagnosis));
    CHECK(found_names(diagnosis) == expected_findings(test_case));
    const bool explained = std::any_of(diagnosis.limits.begin(), diagnosis.limits.end(),
                                       [](const std::string& line) { return line.find("captured graph") != std::string::npos; });
    CHECK(explained);
  }
}

TEST_CASE("diagnosis: one request at batch 1 is clean, and says sequential generation cannot show", "[diagnosis]") {
  DiagnosisCase test_case;
  test_case.requests = test_case.batch_size = 1;
  test_case.bugs.sequential_generation = true;
  const Diagnosis diagnosis = diagnose(recorded_trace(test_case));
  CHECK(diagnosis.bugs.empty());
  const bool explained = std::any_of(diagnosis.limits.begin(), diagnosis.limits.end(),
                                     [](const std::string& line) { return line.find("nothing to batch") != std::string::npos; });
  CHECK(explained);
}

TEST_CASE("diagnosis: an fp32 model's fp32 ops are no bug", "[diagnosis]") {
  DiagnosisCase test_case;
  test_case.dtype = "fp32";
  const Diagnosis diagnosis = diagnose(recorded_trace(test_case));
  CHECK(diagnosis.bugs.empty());
  CHECK(diagnosis.shape.dtype == "fp32");
}

TEST_CASE("diagnosis: a device read in one step is below the threshold, one in every step is host_sync", "[diagnosis]") {
  DiagnosisCase test_case;
  test_case.new_tokens = 9;
  Trace trace = recorded_trace(test_case);
  std::vector<TraceRange> steps;
  for (const TraceRange& range : trace.ranges())
    if (range.kind == RangeKind::Step) steps.push_back(range);
  REQUIRE(steps.size() == 8);
  auto read_inside = [&trace](const TraceRange& step) {
    trace.host_call(HostCall{HostCallKind::DeviceToHost, "memcpy_dtoh", step.begin_ns + 1, step.begin_ns + 2, 4});
  };

  read_inside(steps[3]);  // e.g. a stop-token check every few steps
  CHECK(diagnose(trace).bugs.empty());

  for (const TraceRange& step : steps)
    if (&step != &steps[3]) read_inside(step);
  const Diagnosis diagnosis = diagnose(trace);
  REQUIRE(diagnosis.bugs.size() == 1);
  CHECK(diagnosis.bugs.front().name == "host_sync");
  CHECK(diagnosis.bugs.front().variant == "token");
}

TEST_CASE("diagnosis: the JSON lists each finding with name, evidence and confidence", "[diagnosis]") {
  DiagnosisCase test_case;
  test_case.bugs.no_kv_cache = true;
  test_case.bugs.host_sync = true;
  test_case.bugs.host_sync_per = HostSyncPer::Layer;
  const nlohmann::json json = to_json(diagnose(recorded_trace(test_case)));
  REQUIRE(json["bugs"].size() == 2);
  CHECK(json["bugs"][0]["name"] == "no_kv_cache");
  CHECK(json["bugs"][1]["name"] == "host_sync");
  CHECK(json["bugs"][1]["variant"] == "layer");
  CHECK(json["schema_version"] == 2);
  CHECK(json["diagnosed"] == true);  // a decodelab trace is a generate loop
  CHECK_FALSE(json.contains("not_diagnosed"));
  for (const auto& bug : json["bugs"]) {
    CHECK(bug["evidence"].get<std::string>().size() > 20);
    CHECK(bug["confidence"].get<double>() > 0.5);
    REQUIRE(!bug["evidence_list"].empty());  // the evidence as a short list of its clauses
    CHECK(bug["evidence"].get<std::string>().rfind(bug["evidence_list"][0].get<std::string>(), 0) == 0);
  }
  CHECK(json["trace"]["requests_per_run"] == 4);

  DiagnosisCase clean;
  const nlohmann::json clean_json = to_json(diagnose(recorded_trace(clean)));
  CHECK(clean_json["bugs"].empty());
  CHECK(clean_json["checked"].size() == 5);
  CHECK(clean_json["not_checked"].empty());
}
