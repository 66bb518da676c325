// Scenario loading: every shipped scenario validates; a table of malformed scenarios,
// each with its exact error (file, line, key, problem); --set overrides; the fixed twin;
// rendering back to YAML reloads to the same scenario.
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/base/errors.h"
#include "lab/scenario/scenario.h"
#include "lab/run/slowdown.h"
#include "lab/run/sweep.h"
#include "support/temp_dir.h"

using namespace decodelab;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;
using decodelab::testing::TempDir;

namespace {

// Line numbers below refer to this text.
const char* const kBaseScenario =
    "name: base\n"                       // 1
    "description: a valid scenario\n"    // 2
    "model: lab-tiny\n"                  // 3
    "dtype: fp16\n"                      // 4
    "backend: cpu\n"                     // 5
    "workload:\n"                        // 6
    "  requests: 3\n"                    // 7
    "  batch_size: 2\n"                  // 8
    "  prompt_tokens: 8\n"               // 9
    "  new_tokens: 4\n"                  // 10
    "  seed: 5\n"                        // 11
    "run: {warmup: 0, repeats: 2}\n"     // 12
    "bugs:\n"                            // 13
    "  no_kv_cache: false\n"             // 14
    "  non_contiguous: false\n"          // 15
    "  host_sync: false\n"               // 16
    "  fp32_ops: false\n"                // 17
    "  sequential_generation: false\n";  // 18

// Replaces 1-based lines of the base scenario; nullptr deletes the line; "\n" inside a
// replacement adds lines.
struct LineEdit {
  int line;
  const char* text;
};

std::string edited(std::initializer_list<LineEdit> edits) {
  std::istringstream in(kBaseScenario);
  std::string line, out;
  for (int number = 1; std::getline(in, line); ++number) {
    const LineEdit* edit = nullptr;
    for (const LineEdit& candidate : edits) {
      if (candidate.line == number) edit = &candidate;
    }
    if (!edit) {
      out += line + "\n";
    } else if (edit->text) {
      out += std::string(edit->text) + "\n";
    }
  }
  return out;
}

std::optional<InputError> input_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("every scenario under scenarios/ validates (each sweep point too)", "[scenario]") {
  const std::filesystem::path root = std::filesystem::path(DECODELAB_SOURCE_DIR) / "scenarios";
  int validated = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    const YAML::Node document = read_scenario_document(entry.path());
    for (const SweepPoint& point : expand_sweep(document)) {
      INFO(point.label);
      Scenario scenario;
      REQUIRE_NOTHROW(scenario = parse_scenario(point.scenario, entry.path()));
      CHECK(!scenario.name.empty());
      CHECK(scenario.workload.context_length() <= scenario.model_config.max_position_embeddings);
    }
    ++validated;
  }
  CHECK(validated >= 3);  // the examples at least
}

TEST_CASE("the base scenario of the error table is valid", "[scenario]") {
  const TempDir dir;
  const Scenario scenario = load_scenario(dir.write("base.yaml", kBaseScenario));
  CHECK(scenario.name == "base");
  CHECK(scenario.description == "a valid scenario");
  CHECK(scenario.model_config.name == "lab-tiny");
  CHECK(scenario.model_source.kind == ModelSourceKind::Catalog);
  CHECK(scenario.dtype == DType::F16);
  CHECK(scenario.backend == BackendChoice::Cpu);
  CHECK(scenario.workload.requests == 3);
  CHECK(scenario.workload.batch_size == 2);
  CHECK(scenario.workload.prompt_tokens == 8);
  CHECK(scenario.workload.prompt_ids.empty());
  CHECK(scenario.workload.new_tokens == 4);
  CHECK(scenario.workload.seed == 5);
  CHECK(scenario.workload.host_overhead_us == 0.0);
  CHECK(scenario.warmup == 0);
  CHECK(scenario.repeats.min_repeats == 2);  // repeats: an exact count
  CHECK(scenario.repeats.max_repeats == 2);
  CHECK_FALSE(scenario.bugs.any());
}

TEST_CASE("optional keys take their documented defaults", "[scenario]") {
  const TempDir dir;
  const Scenario scenario = load_scenario(dir.write(
      "minimal.yaml",
      "model: lab-tiny\ndtype: bf16\nworkload: {requests: 1, batch_size: 1, prompt_ids: [7, 9], new_tokens: 2}\n"));
  CHECK(scenario.name == "minimal");  // the file's stem
  CHECK(scenario.description.empty());
  CHECK(scenario.backend == BackendChoice::Auto);
  CHECK(scenario.threads == 0);  // every core
  CHECK_FALSE(scenario_to_json(scenario).contains("threads"));  // absent, as in results written before the key
  CHECK(scenario.workload.prompt_ids == std::vector<int32_t>{7, 9});
  CHECK(scenario.workload.prompt_length() == 2);
  CHECK(scenario.workload.seed == 0);
  CHECK(scenario.warmup == 1);
  CHECK(scenario.repeats == RepeatPolicy{6, 30, 20, 0.03});
  CHECK_FALSE(scenario.expected_slowdown);
  CHECK_FALSE(scenario.bugs.any());
}

TEST_CASE("run: the repeat policy, and expected_slowdown names its metric", "[scenario]") {
  const TempDir dir;
  const Scenario adaptive = load_scenario(dir.write(
      "adaptive.yaml", edited({{12, "run: {warmup: 2, min_repeats: 8, max_repeats: 40, max_seconds: 5, target_ci: 0.02}\n"
                                    "expected_slowdown: {min: 2, max: 4, of: end_to_end}"}})));
  CHECK(adaptive.warmup == 2);
  CHECK(adaptive.repeats == RepeatPolicy{8, 40, 5, 0.02});
  REQUIRE(adaptive.expected_slowdown);
  CHECK(adaptive.expected_slowdown->of == SlowdownMetric::EndToEnd);
  CHECK(adaptive.expected_slowdown->min == 2);
  // min_repeats alone raises the default maximum with it.
  CHECK(load_scenario(dir.write("least.yaml", edited({{12, "run: {min_repeats: 50}"}}))).repeats.max_repeats == 50);
  // Rendered and reloaded, the policy and the metric survive.
  const Scenario reloaded = load_scenario(dir.write("rendered.yaml", scenario_to_yaml(adaptive)));
  CHECK(reloaded.repeats == adaptive.repeats);
  CHECK(reloaded.expected_slowdown->of == SlowdownMetric::EndToEnd);
  CHECK(scenario_to_json(adaptive)["expected_slowdown"]["of"] == "end_to_end");
  // --set keys are remembered (a lab verdict needs to know what changed).
  const Scenario overridden = load_scenario(dir.write("o.yaml", kBaseScenario), {"workload.new_tokens=3", "run.warmup=1"});
  CHECK(overridden.overridden_keys == std::vector<std::string>{"workload.new_tokens", "run.warmup"});
}

TEST_CASE("a --set to the value the scenario already has changes nothing a verdict depends on", "[scenario]") {
  const TempDir dir;
  const auto file = dir.write("o.yaml", kBaseScenario);
  const Scenario as_written = load_scenario(file);
  const std::string seed = std::to_string(as_written.workload.seed);
  const std::string other_seed = std::to_string(as_written.workload.seed + 1);
  const std::string model = scenario_to_json(as_written)["model"].get<std::string>();
  const std::string dtype = dtype_name(as_written.dtype);

  // The same values, key by key or as a whole mapping: no key changed.
  CHECK(load_scenario(file, {"workload.seed=" + seed}).overridden_keys.empty());
  CHECK(load_scenario(file, {"model=" + model, "dtype=" + dtype}).overridden_keys.empty());
  // Another value is a change, and only it is named.
  CHECK(load_scenario(file, {"workload.seed=" + seed, "workload.seed=" + other_seed}).overridden_keys ==
        std::vector<std::string>{"workload.seed"});
  CHECK(load_scenario(file, {"model=" + model, "workload.seed=" + other_seed}).overridden_keys ==
        std::vector<std::string>{"workload.seed"});

  // So the lab's verdict stands for a --set that changes nothing.
  Scenario judged = load_scenario(file, {"workload.seed=" + seed});
  judged.expected_slowdown = ExpectedSlowdown{2, 4, SlowdownMetric::Decode};
  Estimate slowdown;
  slowdown.median = 3;
  slowdown.low = 2.9;
  slowdown.high = 3.1;
  slowdown.samples = 12;
  slowdown.confidence = 0.95;
  CHECK(read_slowdown(judged, slowdown, slowdown).verdict.kind == VerdictKind::InRange);
  Scenario changed = load_scenario(file, {"workload.seed=" + other_seed});
  changed.expected_slowdown = judged.expected_slowdown;
  CHECK(read_slowdown(changed, slowdown, slowdown).verdict.kind == VerdictKind::WorkloadChanged);
}

TEST_CASE("bug values: false, true (default variant) or a mapping of the variant", "[scenario]") {
  const TempDir dir;
  const Scenario defaults = load_scenario(dir.write("defaults.yaml", edited({{14, "  no_kv_cache: true"},
                                                                             {15, "  non_contiguous: true"},
                                                                             {16, "  host_sync: true"},
                                                                             {17, "  fp32_ops: true"},
                                                                             {18, "  sequential_generation: true"}})));
  CHECK(defaults.bugs.no_kv_cache);
  CHECK(defaults.bugs.non_contiguous_mode == NonContiguousMode::Copy);
  CHECK(defaults.bugs.host_sync_per == HostSyncPer::Token);
  CHECK(defaults.bugs.fp32_scope == Fp32Scope::Matmuls);
  CHECK(defaults.bugs.sequential_generation);
  CHECK(defaults.bugs.describe() ==
        "no_kv_cache+non_contiguous(mode=copy)+host_sync(per=token)+fp32_ops(scope=matmuls)+sequential_generation");

  const Scenario variants = load_scenario(dir.write("variants.yaml", edited({{15, "  non_contiguous: {mode: strided}"},
                                                                             {16, "  host_sync: {per: sequence}"},
                                                                             {17, "  fp32_ops:\n    scope: norms"}})));
  CHECK(variants.bugs.non_contiguous);
  CHECK(variants.bugs.non_contiguous_mode == NonContiguousMode::Strided);
  CHECK(variants.bugs.host_sync_per == HostSyncPer::Sequence);
  CHECK(variants.bugs.fp32_scope == Fp32Scope::Norms);
  CHECK_FALSE(variants.bugs.no_kv_cache);
}

TEST_CASE("malformed scenarios: each error names the file, the line and the key", "[scenario]") {
  struct Case {
    std::string text;
    int line;
    std::string key;
    std::string problem;  // exact, unless it ends with "..." (then a prefix)
  };
  const std::vector<Case> cases = {
      {edited({{3, "modle: lab-tiny"}}), 3, "modle", "unknown key (did you mean 'model'?)"},
      {edited({{3, nullptr}}), 1, "model", "missing (expected a model name under configs/models or a path to a model)"},
      {edited({{3, "model: lab-tny"}}), 3, "model", "no model 'lab-tny': not a name under ..."},
      {edited({{4, "dtype: fp8"}}), 4, "dtype", "expected one of fp32 | fp16 | bf16, got 'fp8'"},
      {edited({{4, nullptr}}), 1, "dtype", "missing (expected fp32, fp16 or bf16)"},
      {edited({{5, "backend: gpu"}}), 5, "backend",
       "expected one of auto | cpu | cuda, got 'gpu' (did you mean 'cpu'?)"},
      {edited({{7, "  requests: 0"}}), 7, "workload.requests", "expected an integer ≥ 1, got '0'"},
      {edited({{7, nullptr}}), 6, "workload.requests", "missing (expected an integer ≥ 1)"},
      {edited({{8, "  batch_size: x"}}), 8, "workload.batch_size", "expected an integer ≥ 1, got 'x'"},
      {edited({{8, "  batch_size: 2.5"}}), 8, "workload.batch_size", "expected an integer ≥ 1, got '2.5'"},
      {edited({{8, "  batch_size: \"2\""}}), 8, "workload.batch_size",
       "expected an integer ≥ 1, got the quoted text \"2\""},
      {edited({{8, "  batch_size: [1, 2]"}}), 8, "workload.batch_size", "expected an integer ≥ 1, got a list"},
      {edited({{8, "  batch_size: 99999999999"}}), 8, "workload.batch_size",
       "expected an integer ≥ 1, got '99999999999'"},
      {edited({{8, "  bach_size: 2"}}), 8, "workload.bach_size", "unknown key (did you mean 'batch_size'?)"},
      {edited({{8, "  batch_size: 2\n  batch_size: 3"}}), 9, "workload.batch_size", "duplicate key"},
      {edited({{9, "  prompt_ids: [1, 2, 512]"}}), 9, "workload.prompt_ids[2]",
       "expected an integer in [0, 511], got '512'"},
      {edited({{9, "  prompt_ids:\n    - 4\n    - -1"}}), 11, "workload.prompt_ids[1]",
       "expected an integer in [0, 511], got '-1'"},
      {edited({{9, "  prompt_ids: []"}}), 9, "workload.prompt_ids",
       "expected a non-empty list of token ids, got an empty list"},
      {edited({{9, nullptr}}), 6, "workload.prompt_tokens",
       "missing (expected prompt_tokens: an integer ≥ 1, or prompt_ids: a list of token ids)"},
      {edited({{9, "  prompt_tokens: 8\n  prompt_ids: [1]"}}), 10, "workload.prompt_ids",
       "give prompt_tokens or prompt_ids, not both"},
      {edited({{10, "  new_tokens: 1017"}}), 10, "workload.new_tokens",
       "prompt (8) + new_tokens (1017) = 1025 exceeds lab-tiny's max_position_embeddings (1024)"},
      {edited({{11, "  seed: -1"}}), 11, "workload.seed", "expected an integer in [0, 2^64), got '-1'"},
      {edited({{11, "  seed: 0\n  host_overhead_us: -2"}}), 12, "workload.host_overhead_us",
       "expected a number ≥ 0, got '-2'"},
      {edited({{6, "workload: 5"}, {7, nullptr}, {8, nullptr}, {9, nullptr}, {10, nullptr}, {11, nullptr}}), 6,
       "workload",
       "expected a mapping of requests, batch_size, prompt_tokens, prompt_ids, new_tokens, seed, host_overhead_us, got "
       "'5'"},
      {edited({{12, "run: {warmup: -1, repeats: 2}"}}), 12, "run.warmup", "expected an integer ≥ 0, got '-1'"},
      {edited({{12, "run: {warmup: 0, repeats: 0}"}}), 12, "run.repeats", "expected an integer ≥ 1, got '0'"},
      {edited({{12, "run: {warmup: 0, repeat: 2}"}}), 12, "run.repeat", "unknown key (did you mean 'repeats'?)"},
      {edited({{12, "run: {repeats: 2, max_repeats: 4}"}}), 12, "run.max_repeats",
       "give repeats (an exact count) or min_repeats/max_repeats, not both"},
      {edited({{12, "run: {min_repeats: 8, max_repeats: 4}"}}), 12, "run.max_repeats", "expected an integer ≥ 8, got '4'"},
      {edited({{12, "run: {max_seconds: 0}"}}), 12, "run.max_seconds", "expected a number of seconds > 0, got '0'"},
      {edited({{12, "run: {target_ci: 5}"}}), 12, "run.target_ci", "expected a fraction in (0, 1), e.g. 0.03 for ±3%, got '5'"},
      {edited({{12, "run: {warmup: 0}\nexpected_slowdown: {min: 2, max: 4}"}}), 13, "expected_slowdown.of",
       "missing (expected decode (per-token throughput) or end_to_end (the whole generation))"},
      {edited({{12, "run: {warmup: 0}\nexpected_slowdown: {min: 2, max: 4, of: total}"}}), 13, "expected_slowdown.of",
       "expected one of decode | end_to_end, got 'total'"},
      {edited({{14, "  no_kv_cache: {mode: copy}"}}), 14, "bugs.no_kv_cache",
       "expected true or false (this bug has no options), got a mapping"},
      {edited({{15, "  non_contiguous: yes"}}), 15, "bugs.non_contiguous",
       "expected true, false or {mode: copy, strided}, got 'yes'"},
      {edited({{15, "  non_contiguous: {mode: sideways}"}}), 15, "bugs.non_contiguous.mode",
       "expected one of copy | strided, got 'sideways'"},
      {edited({{16, "  host_sync: {every: token}"}}), 16, "bugs.host_sync.every", "unknown key (expected one of per)"},
      {edited({{16, "  host_sync: {per: step}"}}), 16, "bugs.host_sync.per",
       "expected one of token | layer | sequence, got 'step'"},
      {edited({{4, "dtype: fp32"}, {17, "  fp32_ops: {scope: all}"}}), 17, "bugs.fp32_ops",
       "fp32_ops runs ops of a half-precision model in fp32, but dtype is fp32 (use fp16 or bf16)"},
      {edited({{18, "  sequential_generaton: true"}}), 18, "bugs.sequential_generaton",
       "unknown key (did you mean 'sequential_generation'?)"},
      {edited({{4, "dtype: fp32\nthreads: 2000"}}), 5, "threads", "expected an integer in [0, 1024], got '2000'"},
      {edited({{4, "dtype: fp32\nthreads: -1"}}), 5, "threads", "expected an integer in [0, 1024], got '-1'"},
      {edited({{1, "name: [a, b]"}}), 1, "name", "expected text, got a list"},
      {"- just\n- a list\n", 1, "",
       "expected a mapping of name, description, model, dtype, backend, threads, workload, run, bugs, expected_slowdown, sweep, got a list"},
      {"", 1, "model", "missing (expected a model name under configs/models or a path to a model)"},
      {"model: lab-tiny\ndtype: [fp16\n", 3, "", "not valid YAML: ..."},
  };
  const TempDir dir;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& test_case = cases[i];
    const std::filesystem::path file = dir.write("case" + std::to_string(i) + ".yaml", test_case.text);
    INFO("case " << i << ":\n" << test_case.text);
    const std::optional<InputError> error = input_error_of([&] { load_scenario(file); });
    REQUIRE(error.has_value());
    CHECK(error->file() == file.string());
    CHECK(error->line() == test_case.line);
    CHECK(error->key() == test_case.key);
    if (test_case.problem.size() > 3 && test_case.problem.substr(test_case.problem.size() - 3) == "...") {
      CHECK_THAT(error->problem(), StartsWith(test_case.problem.substr(0, test_case.problem.size() - 3)));
    } else {
      CHECK(error->problem() == test_case.problem);
    }
  }
}

TEST_CASE("a model that is not in the catalogue gets a 'did you mean' and the list of names", "[scenario]") {
  const TempDir dir;
  const auto error = input_error_of([&] { load_scenario(dir.write("s.yaml", edited({{3, "model: lab-smal"}}))); });
  REQUIRE(error.has_value());
  CHECK_THAT(error->problem(), Contains("lab-tiny") && Contains("llama-8b") && EndsWith("(did you mean 'lab-small'?)"));
}

TEST_CASE("an error inside a model file names that file, its line and its key", "[scenario]") {
  const TempDir dir;
  const std::filesystem::path model = dir.write("models/odd.yaml",
                                                "vocab_size: 64\nhidden_size: 32\nintermediate_size: 48\n"
                                                "num_hidden_layers: 1\nnum_attention_heads: 4\n"
                                                "num_key_value_heads: 3\nmax_position_embeddings: 64\n");
  const auto error = input_error_of([&] {
    load_scenario(dir.write("s.yaml", edited({{3, "model: models/odd.yaml"}})));
  });
  REQUIRE(error.has_value());
  CHECK(error->file() == model.string());
  CHECK(error->line() == 6);
  CHECK(error->key() == "num_key_value_heads");
  CHECK(error->problem() == "num_key_value_heads (3) must divide num_attention_heads (4)");
}

TEST_CASE("a model path resolves relative to the scenario file, not the working directory", "[scenario]") {
  const TempDir dir;
  dir.write("shapes/mini.yaml",
            "vocab_size: 64\nhidden_size: 32\nintermediate_size: 48\nnum_hidden_layers: 1\n"
            "num_attention_heads: 2\nmax_position_embeddings: 32\n");
  const Scenario scenario = load_scenario(
      dir.write("deep/nested/s.yaml", edited({{3, "model: ../../shapes/mini.yaml"}, {10, "  new_tokens: 24"}})));
  CHECK(scenario.model_source.kind == ModelSourceKind::File);
  CHECK(scenario.model_config.name == "mini");
  CHECK(scenario.model_config.vocab_size == 64);
  CHECK(scenario.model_config.num_key_value_heads == 2);  // defaulted to the heads
  CHECK(scenario.model_config.head_dim == 16);
}

TEST_CASE("a --set override changes any key before validation", "[scenario]") {
  const TempDir dir;
  const std::filesystem::path file = dir.write("s.yaml", kBaseScenario);

  SECTION("a scalar") {
    const Scenario scenario = load_scenario(file, {"workload.batch_size=3", "run.repeats=7"});
    CHECK(scenario.workload.batch_size == 3);
    CHECK(scenario.repeats.min_repeats == 7);
    CHECK(scenario.workload.requests == 3);  // untouched keys keep the file's values
  }
  SECTION("the last of two overrides of one key wins") {
    CHECK(load_scenario(file, {"workload.batch_size=1", "workload.batch_size=3"}).workload.batch_size == 3);
  }
  SECTION("a mapping, parsed as YAML") {
    const Scenario scenario = load_scenario(file, {"bugs.host_sync={per: layer}"});
    CHECK(scenario.bugs.host_sync);
    CHECK(scenario.bugs.host_sync_per == HostSyncPer::Layer);
  }
  SECTION("an option under a bug that the file sets to false") {
    const Scenario scenario = load_scenario(file, {"bugs.non_contiguous.mode=strided"});
    CHECK(scenario.bugs.non_contiguous);
    CHECK(scenario.bugs.non_contiguous_mode == NonContiguousMode::Strided);
  }
  SECTION("a list, after removing the key it replaces (an empty value removes a key)") {
    const Scenario scenario = load_scenario(file, {"workload.prompt_tokens=", "workload.prompt_ids=[3, 1, 4]"});
    CHECK(scenario.workload.prompt_ids == std::vector<int32_t>{3, 1, 4});
    CHECK(scenario.workload.prompt_length() == 3);
  }
  SECTION("one of two keys that exclude each other replaces the other") {
    // The file says prompt_tokens and run.repeats: an override of the other key wins.
    const Scenario by_ids = load_scenario(file, {"workload.prompt_ids=[3, 1, 4]"});
    CHECK(by_ids.workload.prompt_ids == std::vector<int32_t>{3, 1, 4});
    const Scenario by_range = load_scenario(file, {"run.max_repeats=9"});
    CHECK(by_range.repeats.max_repeats == 9);
    CHECK(by_range.repeats.min_repeats == RepeatPolicy{}.min_repeats);
    const Scenario back = load_scenario(file, {"run.max_repeats=9", "run.repeats=4"});
    CHECK(back.repeats.min_repeats == 4);
    CHECK(back.repeats.max_repeats == 4);
  }
  SECTION("a section the file does not have") {
    const Scenario scenario = load_scenario(
        dir.write("nobugs.yaml",
                  edited({{13, nullptr}, {14, nullptr}, {15, nullptr}, {16, nullptr}, {17, nullptr}, {18, nullptr}})),
        {"bugs.sequential_generation=true"});
    CHECK(scenario.bugs.sequential_generation);
    CHECK(scenario.bugs.describe() == "sequential_generation");
  }
  SECTION("the model") { CHECK(load_scenario(file, {"model=lab-small"}).model_config.vocab_size == 32000); }
}

TEST_CASE("a --set error names the key and say it came from the command line", "[scenario]") {
  const TempDir dir;
  const std::filesystem::path file = dir.write("s.yaml", kBaseScenario);
  struct Case {
    std::vector<std::string> assignments;
    std::string error_file;
    int line;
    std::string key;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {{"workload.batch_size=0"},
       file.string(),
       0,
       "workload.batch_size",
       "expected an integer ≥ 1, got '0' (from --set workload.batch_size=0)"},
      {{"workload.bogus=1"},
       file.string(),
       0,
       "workload.bogus",
       "unknown key (expected one of requests, batch_size, prompt_tokens, prompt_ids, new_tokens, seed, "
       "host_overhead_us) (from --set workload.bogus=1)"},
      {{"bugs.host_sync={per: often}"},
       file.string(),
       0,
       "bugs.host_sync.per",
       "expected one of token | layer | sequence, got 'often' (from --set bugs.host_sync={per: often})"},
      {{"run.repeats"}, "--set", 0, "run.repeats", "expected key.path=value, e.g. workload.batch_size=4"},
      {{"=3"}, "--set", 0, "=3", "expected key.path=value, e.g. workload.batch_size=4"},
      {{"workload..seed=3"}, "--set", 0, "workload..seed", "expected a dotted key such as bugs.host_sync"},
      {{"workload.requests.x=1"},
       file.string(),
       7,
       "workload.requests.x",
       "cannot set it: workload.requests is '3', not a mapping (set the whole value instead, e.g. --set "
       "workload.requests={...})"},
  };
  for (const Case& test_case : cases) {
    INFO(test_case.assignments.front());
    const auto error = input_error_of([&] { load_scenario(file, test_case.assignments); });
    REQUIRE(error.has_value());
    CHECK(error->file() == test_case.error_file);
    CHECK(error->line() == test_case.line);
    CHECK(error->key() == test_case.key);
    CHECK(error->problem() == test_case.problem);
  }
  const auto bad_yaml = input_error_of([&] { load_scenario(file, {"bugs.host_sync={per: [}"}); });
  REQUIRE(bad_yaml.has_value());
  CHECK(bad_yaml->key() == "bugs.host_sync");
  CHECK_THAT(bad_yaml->problem(), StartsWith("--set value '{per: [}' is not valid YAML"));
}

TEST_CASE("the fixed twin turns every bug off and keeps everything else", "[scenario]") {
  const TempDir dir;
  const Scenario buggy = load_scenario(dir.write("buggy.yaml", edited({{14, "  no_kv_cache: true"},
                                                                       {16, "  host_sync: {per: layer}"},
                                                                       {17, "  fp32_ops: {scope: all}"},
                                                                       {18, "  sequential_generation: true"}})));
  REQUIRE(buggy.bugs.any());
  const Scenario twin = fixed_twin(buggy);
  CHECK_FALSE(twin.bugs.any());
  CHECK(buggy.bugs.any());  // the original is untouched
  CHECK(twin.name == buggy.name);
  CHECK(twin.file == buggy.file);
  CHECK(twin.model_config.name == buggy.model_config.name);
  CHECK(twin.model_config.parameter_count() == buggy.model_config.parameter_count());
  CHECK(twin.dtype == buggy.dtype);
  CHECK(twin.backend == buggy.backend);
  CHECK(twin.workload.requests == buggy.workload.requests);
  CHECK(twin.workload.batch_size == buggy.workload.batch_size);
  CHECK(twin.workload.prompt_tokens == buggy.workload.prompt_tokens);
  CHECK(twin.workload.new_tokens == buggy.workload.new_tokens);
  CHECK(twin.workload.seed == buggy.workload.seed);
  CHECK(twin.warmup == buggy.warmup);
  CHECK(twin.repeats == buggy.repeats);
  // Rendered, the two differ only in the bugs.
  nlohmann::json buggy_json = scenario_to_json(buggy), twin_json = scenario_to_json(twin);
  CHECK(buggy_json["bugs"] != twin_json["bugs"]);
  buggy_json.erase("bugs");
  twin_json.erase("bugs");
  CHECK(buggy_json == twin_json);
}

TEST_CASE("a scenario rendered to YAML reloads to the same scenario", "[scenario]") {
  const TempDir dir;
  dir.write("shapes/mini.yaml",
            "vocab_size: 64\nhidden_size: 32\nintermediate_size: 48\nnum_hidden_layers: 1\n"
            "num_attention_heads: 2\nmax_position_embeddings: 32\n");
  for (const std::string& model_line : {std::string("model: lab-tiny"), std::string("model: shapes/mini.yaml")}) {
    INFO(model_line);
    const Scenario original =
        load_scenario(dir.write("original.yaml", edited({{3, model_line.c_str()},
                                                         {5, "backend: cpu\nthreads: 3"},
                                                         {9, "  prompt_ids: [5, 6, 7]"},
                                                         {10, "  new_tokens: 3\n  host_overhead_us: 2.5"},
                                                         {15, "  non_contiguous: {mode: strided}"},
                                                         {16, "  host_sync: true"}})));
    // Rendered into another folder: a model path must still resolve.
    const Scenario reloaded = load_scenario(dir.write("elsewhere/rendered.yaml", scenario_to_yaml(original)));
    CHECK(reloaded.name == original.name);
    CHECK(reloaded.description == original.description);
    CHECK(reloaded.model_config.name == original.model_config.name);
    CHECK(std::filesystem::equivalent(reloaded.model_source.path, original.model_source.path));
    CHECK(reloaded.dtype == original.dtype);
    CHECK(reloaded.backend == original.backend);
    CHECK(reloaded.threads == 3);
    CHECK(scenario_to_json(reloaded)["threads"] == 3);
    CHECK(reloaded.workload.requests == original.workload.requests);
    CHECK(reloaded.workload.batch_size == original.workload.batch_size);
    CHECK(reloaded.workload.prompt_ids == original.workload.prompt_ids);
    CHECK(reloaded.workload.new_tokens == original.workload.new_tokens);
    CHECK(reloaded.workload.seed == original.workload.seed);
    CHECK(reloaded.workload.host_overhead_us == original.workload.host_overhead_us);
    CHECK(reloaded.warmup == original.warmup);
    CHECK(reloaded.repeats == original.repeats);
    CHECK(reloaded.bugs.describe() == original.bugs.describe());
  }
}

TEST_CASE("scenario JSON writes each bug as false, true or its options", "[scenario]") {
  const TempDir dir;
  const Scenario scenario = load_scenario(dir.write(
      "s.yaml", edited({{14, "  no_kv_cache: true"}, {16, "  host_sync: {per: layer}"}, {9, "  prompt_ids: [1, 2]"}})));
  const nlohmann::json json = scenario_to_json(scenario);
  CHECK(json["model"] == "lab-tiny");
  CHECK(json["dtype"] == "fp16");
  CHECK(json["bugs"]["no_kv_cache"] == true);
  CHECK(json["bugs"]["non_contiguous"] == false);
  CHECK(json["bugs"]["host_sync"] == nlohmann::json{{"per", "layer"}});
  CHECK(json["workload"]["prompt_ids"] == nlohmann::json::array({1, 2}));
  CHECK_FALSE(json["workload"].contains("prompt_tokens"));
  CHECK(json["run"]["min_repeats"] == 2);
  CHECK(json["run"]["max_repeats"] == 2);
}

TEST_CASE("a rendered scenario writes its numbers as they were written", "[scenario]") {
  const TempDir dir;
  const Scenario scenario = load_scenario(dir.write(
      "numbers.yaml", edited({{12, "run: {target_ci: 0.03, max_seconds: 12.5}\nexpected_slowdown: {min: 1.1, max: 4.2, of: decode}"}})));
  const std::string yaml = scenario_to_yaml(scenario);
  CHECK_THAT(yaml, Catch::Matchers::Contains("target_ci: 0.03") && Catch::Matchers::Contains("max_seconds: 12.5") &&
                       Catch::Matchers::Contains("min: 1.1"));
  CHECK(yaml.find("0.0299999") == std::string::npos);
  const Scenario reloaded = load_scenario(dir.write("again.yaml", yaml));
  CHECK(reloaded.repeats == scenario.repeats);
  CHECK(reloaded.expected_slowdown->min == scenario.expected_slowdown->min);
}
