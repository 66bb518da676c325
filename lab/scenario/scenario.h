// A scenario: which model, precision, backend, workload and bugs one run uses. Loading
// validates the whole file before any work starts; every problem is an InputError with
// the file, the line and the dotted key. Schema (optional keys marked, with defaults):
//
//   name: example            # optional, default: the file's stem
//   description: text        # optional
//   model: lab-small         # catalogue name, or a path (relative to this file) to a model YAML or checkpoint dir
//   dtype: fp16              # fp32 | fp16 | bf16
//   backend: auto            # optional, default auto: auto | cpu | cuda
//   threads: 0               # optional, default 0 = every core: CPU kernel threads (--threads overrides)
//   workload:
//     requests: 8            # ≥ 1
//     batch_size: 8          # ≥ 1
//     prompt_tokens: 128     # ≥ 1 seeded random ids ... or
//     prompt_ids: [1, 2, 3]  # ... explicit ids (in the vocab) for every request: exactly one of the two
//     new_tokens: 128        # ≥ 1; prompt + new_tokens ≤ max_position_embeddings
//     seed: 0                # optional, default 0
//     host_overhead_us: 0    # optional, default 0
//   run:                     # optional, these defaults (docs/metrics.md, "Repeats"):
//     warmup: 1              #   untimed generations first, ≥ 0
//     min_repeats: 6         #   timed repeats at least (6 is the fewest with a 95% interval)
//     max_repeats: 30        #   ... at most, ≥ min_repeats
//     max_seconds: 20        #   ... or until this much timed work, > 0 (min_repeats always run)
//     target_ci: 0.03        #   stop once the interval of the median is within ±3%, in (0, 1)
//     repeats: 3             #   instead of min/max_repeats: exactly this many (≥ 1)
//     cuda_graphs: false     #   true replays each decode step as a CUDA graph
//   expected_slowdown: {min: 2, max: 4, of: decode}  # optional: the range the lesson expects
//                            # (decodelab lab); of: decode (per-token throughput) | end_to_end
//   sweep: product           # optional: how list-valued keys combine (product | zip; decodelab sweep);
//                            # the workload keys, dtype, backend and threads sweep when given as lists
//   bugs:                    # optional, all false: each false, true, or a mapping of options
//     no_kv_cache: false            # true only
//     non_contiguous: false         # {mode: copy|strided}, true = copy
//     host_sync: false              # {per: token|layer|sequence}, true = token
//     fp32_ops: false               # {scope: norms|matmuls|all}, true = matmuls; not on an fp32 model
//     sequential_generation: false  # true only
//
// The steps are exposed separately (read the document, apply --set, parse) so that a
// sweep can expand list-valued keys on the document before each copy is validated.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bugs/bug_set.h"
#include "engine/base/dtype.h"
#include "engine/model/generator.h"
#include "engine/model/model_config.h"
#include "lab/scenario/model_catalog.h"

namespace decodelab {

enum class BackendChoice { Auto, Cpu, Cuda };

// More CPU kernel threads than this is refused as a typo (OpenMP would start them all).
constexpr int kMaxCpuThreads = 1024;
const char* to_string(BackendChoice choice);

// How many timed repeats a run takes: at least min_repeats, then until the interval of
// the median is within ±target_ci, max_repeats are done, or max_seconds of timed work.
struct RepeatPolicy {
  int min_repeats = 6;
  int max_repeats = 30;
  double max_seconds = 20;
  double target_ci = 0.03;
  bool operator==(const RepeatPolicy&) const = default;
};

// Which slowdown a figure, a range or a verdict is about (docs/metrics.md).
enum class SlowdownMetric { Decode, EndToEnd };
const char* to_string(SlowdownMetric metric);  // "decode", "end_to_end"

// The slowdown range a lesson documents, and which slowdown it is about.
struct ExpectedSlowdown {
  double min = 0;
  double max = 0;
  SlowdownMetric of = SlowdownMetric::Decode;
};

struct Scenario {
  std::string name;
  std::string description;
  std::filesystem::path file;
  ModelConfig model_config;
  ModelSource model_source;  // catalogue name, model file, or checkpoint directory
  DType dtype = DType::F16;
  BackendChoice backend = BackendChoice::Auto;
  int threads = 0;  // CPU kernel threads; 0 = every core
  Workload workload;
  int warmup = 1;
  RepeatPolicy repeats;
  bool cuda_graphs = false;  // run.cuda_graphs: capture a decode step, replay it (CUDA only)
  BugSet bugs;
  std::optional<ExpectedSlowdown> expected_slowdown;
  // Dotted keys a --set changed ("workload.new_tokens"): a range written for the file's
  // workload does not hold once one of its workload keys was changed. load_scenario keeps
  // only the keys whose value differs from the file's (keys_changed_in_value).
  std::vector<std::string> overridden_keys;
};

// One --set: "workload.batch_size=4" -> {key "workload.batch_size", value "4"}. An empty
// value ("workload.prompt_tokens=") removes the key.
struct ScenarioOverride {
  std::string key;
  std::string value;  // parsed as YAML when applied
};
ScenarioOverride parse_override(const std::string& assignment);

// The raw document (syntax errors become InputError with their line).
YAML::Node read_scenario_document(const std::filesystem::path& file);
// The same from text already read; `file` names it in errors.
YAML::Node parse_scenario_text(const std::string& text, const std::filesystem::path& file);
// Replaces (or adds) the value at the override's dotted key, creating mappings on the way.
void apply_override(YAML::Node& document, const ScenarioOverride& override_value, const std::filesystem::path& file);
// Validates a document completely and resolves the model. `overrides` only changes how
// errors point at keys that came from the command line.
Scenario parse_scenario(const YAML::Node& document, const std::filesystem::path& file,
                        const std::vector<ScenarioOverride>& overrides = {});
// read + every --set + parse.
Scenario load_scenario(const std::filesystem::path& file, const std::vector<std::string>& assignments = {});
// Of overridden.overridden_keys, those whose value (as scenario_to_json renders it) differs
// from the scenario as written: `--set workload.seed=0` on a file whose seed is 0 changes none.
std::vector<std::string> keys_changed_in_value(const Scenario& overridden, const Scenario& as_written);

// The same scenario with every bug off (the reference a buggy run is compared with).
Scenario fixed_twin(const Scenario& scenario);

// Back to the scenario schema, for result files. A model given by path is written as an
// absolute path so that the rendering still resolves from wherever it is stored.
std::string scenario_to_yaml(const Scenario& scenario);
nlohmann::json scenario_to_json(const Scenario& scenario);
nlohmann::json workload_to_json(const Workload& workload);
// run: {warmup, min_repeats, max_repeats, max_seconds, target_ci, cuda_graphs}.
nlohmann::json run_policy_to_json(const Scenario& scenario);
// Each bug as false, true, or its options: {"host_sync": {"per": "layer"}, ...}.
nlohmann::json bugs_to_json(const BugSet& bugs);

}  // namespace decodelab
