// Scenario parsing and validation. The model is resolved first, because the prompt ids
// (within the vocab) and the context (within max_position_embeddings) are checked
// against it; everything else is checked in the order the schema lists it.
#include "lab/scenario/scenario.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

#include "engine/base/errors.h"
#include "lab/paths.h"
#include "lab/scenario/yaml_fields.h"

namespace decodelab {

namespace fs = std::filesystem;

const char* to_string(SlowdownMetric metric) { return metric == SlowdownMetric::EndToEnd ? "end_to_end" : "decode"; }

const char* to_string(BackendChoice choice) {
  switch (choice) {
    case BackendChoice::Auto: return "auto";
    case BackendChoice::Cpu: return "cpu";
    case BackendChoice::Cuda: return "cuda";
  }
  return "?";
}

YAML::Node read_scenario_document(const fs::path& file) {
  std::error_code error;
  if (!fs::is_regular_file(file, error)) throw InputError(file.string(), 0, "", "no such scenario file");
  std::ifstream stream(file, std::ios::binary);
  std::ostringstream text;
  text << stream.rdbuf();
  if (!stream) throw InputError(file.string(), 0, "", "cannot read the scenario file");
  return parse_scenario_text(text.str(), file);
}

YAML::Node parse_scenario_text(const std::string& text, const fs::path& file) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& parse_error) {
    throw InputError(file.string(), parse_error.mark.line + 1, "", "not valid YAML: " + parse_error.msg);
  }
}

namespace {

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : ", ") + word;
  return text;
}

ModelSource resolve_model_field(const YamlField& field, const fs::path& scenario_file) {
  const std::string value = field.text();
  if (value.empty()) field.expected("a model name under configs/models or a path to a model");
  const fs::path folder = scenario_file.parent_path().empty() ? fs::path(".") : scenario_file.parent_path();
  if (std::optional<ModelSource> source = find_model(value, folder)) return *source;
  const std::vector<std::string> names = catalog_model_names();
  std::error_code error;
  const fs::path as_path = fs::path(value).is_absolute() ? fs::path(value) : folder / value;
  if (fs::is_directory(as_path, error)) {
    field.fail("'" + value + "' is a directory without config.json, not a Hugging Face checkpoint");
  }
  field.fail("no model '" + value + "': not a name under " + models_dir().string() + " (" + joined(names) +
             ") nor a model file or checkpoint directory relative to " + folder.string() + did_you_mean(value, names));
}

// A bug value: false (off), true (on, default variant) or a mapping of its one option.
// Returns "" when off, else the option's value (the default for `true`).
std::string read_bug(const YamlField& field, const std::string& option, const std::vector<std::string>& choices,
                     const std::string& default_choice) {
  if (field.node && field.node.IsMap()) {
    if (option.empty()) field.expected("true or false (this bug has no options)");
    const YamlMapping mapping = YamlMapping::of(field, {option});
    if (auto value = mapping.optional(option)) return value->choice(choices);
    return default_choice;
  }
  if (option.empty()) return field.boolean() ? "on" : "";
  if (field.node && field.node.IsScalar() && field.node.Tag() != "!") {
    const std::string& text = field.node.Scalar();
    if (text == "true" || text == "True" || text == "TRUE") return default_choice;
    if (text == "false" || text == "False" || text == "FALSE") return "";
  }
  field.expected("true, false or {" + option + ": " + joined(choices) + "}");
}

void parse_workload(const YamlField& field, const ModelConfig& model, Workload& workload) {
  const YamlMapping mapping = YamlMapping::of(
      field, {"requests", "batch_size", "prompt_tokens", "prompt_ids", "new_tokens", "seed", "host_overhead_us"});
  if (!field.node || !field.node.IsMap()) field.expected("a mapping with requests, batch_size, prompt, new_tokens");
  const std::string size = "an integer ≥ 1";
  workload.requests = static_cast<int>(mapping.required("requests", size).integer(1, INT32_MAX));
  workload.batch_size = static_cast<int>(mapping.required("batch_size", size).integer(1, INT32_MAX));

  const std::optional<YamlField> prompt_tokens = mapping.optional("prompt_tokens");
  const std::optional<YamlField> prompt_ids = mapping.optional("prompt_ids");
  if (prompt_tokens && prompt_ids) prompt_ids->fail("give prompt_tokens or prompt_ids, not both");
  if (!prompt_tokens && !prompt_ids) {
    field.source->fail(mapping.line(), mapping.key_path("prompt_tokens"),
                       "missing (expected prompt_tokens: an integer ≥ 1, or prompt_ids: a list of token ids)");
  }
  workload.prompt_ids.clear();
  if (prompt_tokens) {
    workload.prompt_tokens = static_cast<int>(prompt_tokens->integer(1, INT32_MAX));
  } else {
    if (!prompt_ids->node.IsSequence() || prompt_ids->node.size() == 0) {
      prompt_ids->expected("a non-empty list of token ids");
    }
    for (size_t i = 0; i < prompt_ids->node.size(); ++i) {
      const YAML::Node element = prompt_ids->node[i];
      const YamlField id{field.source, prompt_ids->key + "[" + std::to_string(i) + "]", element,
                         line_of(element, prompt_ids->line)};
      workload.prompt_ids.push_back(static_cast<int32_t>(id.integer(0, model.vocab_size - 1)));
    }
    workload.prompt_tokens = static_cast<int>(workload.prompt_ids.size());
  }

  const YamlField new_tokens = mapping.required("new_tokens", size);
  workload.new_tokens = static_cast<int>(new_tokens.integer(1, INT32_MAX));
  const int64_t context = int64_t{workload.prompt_length()} + workload.new_tokens;
  if (context > model.max_position_embeddings) {
    new_tokens.fail("prompt (" + std::to_string(workload.prompt_length()) + ") + new_tokens (" +
                    std::to_string(workload.new_tokens) + ") = " + std::to_string(context) + " exceeds " + model.name +
                    "'s max_position_embeddings (" + std::to_string(model.max_position_embeddings) + ")");
  }
  workload.seed = 0;
  if (auto seed = mapping.optional("seed")) workload.seed = seed->unsigned_integer();
  workload.host_overhead_us = 0.0;
  if (auto overhead = mapping.optional("host_overhead_us")) workload.host_overhead_us = overhead->number(0.0);
}

void parse_run(const YamlField& field, Scenario& scenario) {
  const YamlMapping mapping = YamlMapping::of(
      field, {"warmup", "repeats", "min_repeats", "max_repeats", "max_seconds", "target_ci", "cuda_graphs"});
  if (auto graphs = mapping.optional("cuda_graphs")) scenario.cuda_graphs = graphs->boolean();
  if (auto warmup = mapping.optional("warmup")) scenario.warmup = static_cast<int>(warmup->integer(0, INT32_MAX));
  RepeatPolicy& policy = scenario.repeats;
  const std::optional<YamlField> exact = mapping.optional("repeats");
  const std::optional<YamlField> least = mapping.optional("min_repeats");
  const std::optional<YamlField> most = mapping.optional("max_repeats");
  if (exact && (least || most)) {
    (least ? *least : *most).fail("give repeats (an exact count) or min_repeats/max_repeats, not both");
  }
  if (exact) policy.min_repeats = policy.max_repeats = static_cast<int>(exact->integer(1, INT32_MAX));
  if (least) {
    policy.min_repeats = static_cast<int>(least->integer(1, INT32_MAX));
    if (!most) policy.max_repeats = std::max(policy.max_repeats, policy.min_repeats);
  }
  if (most) policy.max_repeats = static_cast<int>(most->integer(policy.min_repeats, INT32_MAX));
  if (auto seconds = mapping.optional("max_seconds")) {
    policy.max_seconds = seconds->number(0.0);
    if (!(policy.max_seconds > 0)) seconds->expected("a number of seconds > 0");
  }
  if (auto target = mapping.optional("target_ci")) {
    policy.target_ci = target->number(0.0);
    if (!(policy.target_ci > 0 && policy.target_ci < 1)) target->expected("a fraction in (0, 1), e.g. 0.03 for ±3%");
  }
}

void parse_expected_slowdown(const YamlField& field, Scenario& scenario) {
  const YamlMapping mapping = YamlMapping::of(field, {"min", "max", "of"});
  ExpectedSlowdown expected;
  expected.min = mapping.required("min", "a number ≥ 1").number(1.0);
  expected.max = mapping.required("max", "a number ≥ min").number(expected.min);
  // Which slowdown the range is about must be said: the two differ by the prefill's share.
  const std::string of = mapping.required("of", "decode (per-token throughput) or end_to_end (the whole generation)")
                             .choice({"decode", "end_to_end"});
  expected.of = of == "end_to_end" ? SlowdownMetric::EndToEnd : SlowdownMetric::Decode;
  scenario.expected_slowdown = expected;
}

void parse_bugs(const YamlField& field, Scenario& scenario) {
  const YamlMapping mapping =
      YamlMapping::of(field, {"no_kv_cache", "non_contiguous", "host_sync", "fp32_ops", "sequential_generation"});
  BugSet& bugs = scenario.bugs;
  bugs = BugSet{};
  if (auto bug = mapping.optional("no_kv_cache")) bugs.no_kv_cache = !read_bug(*bug, "", {}, "").empty();
  if (auto bug = mapping.optional("non_contiguous")) {
    const std::string mode = read_bug(*bug, "mode", {"copy", "strided"}, "copy");
    bugs.non_contiguous = !mode.empty();
    bugs.non_contiguous_mode = mode == "strided" ? NonContiguousMode::Strided : NonContiguousMode::Copy;
  }
  if (auto bug = mapping.optional("host_sync")) {
    const std::string per = read_bug(*bug, "per", {"token", "layer", "sequence"}, "token");
    bugs.host_sync = !per.empty();
    bugs.host_sync_per = per == "layer"      ? HostSyncPer::Layer
                         : per == "sequence" ? HostSyncPer::Sequence
                                             : HostSyncPer::Token;
  }
  if (auto bug = mapping.optional("fp32_ops")) {
    const std::string scope = read_bug(*bug, "scope", {"norms", "matmuls", "all"}, "matmuls");
    bugs.fp32_ops = !scope.empty();
    bugs.fp32_scope = scope == "norms" ? Fp32Scope::Norms : scope == "all" ? Fp32Scope::All : Fp32Scope::Matmuls;
    if (bugs.fp32_ops && scenario.dtype == DType::F32) {
      bug->fail("fp32_ops runs ops of a half-precision model in fp32, but dtype is fp32 (use fp16 or bf16)");
    }
  }
  if (auto bug = mapping.optional("sequential_generation")) {
    bugs.sequential_generation = !read_bug(*bug, "", {}, "").empty();
  }
}

}  // namespace

Scenario parse_scenario(const YAML::Node& document, const fs::path& file,
                        const std::vector<ScenarioOverride>& overrides) {
  YamlSource source{file, {}};
  for (const ScenarioOverride& override_value : overrides) source.overrides[override_value.key] = override_value.value;
  const YamlMapping root(source, document, "", line_of(document, 1),
                         {"name", "description", "model", "dtype", "backend", "threads", "workload", "run",
                          "bugs", "expected_slowdown", "sweep"});

  Scenario scenario;
  scenario.file = file;
  for (const ScenarioOverride& override_value : overrides) scenario.overridden_keys.push_back(override_value.key);
  scenario.name = root.has("name") ? root.optional("name")->text() : "";
  if (scenario.name.empty()) scenario.name = file.stem().string();
  if (auto description = root.optional("description")) scenario.description = description->text();

  scenario.model_source =
      resolve_model_field(root.required("model", "a model name under configs/models or a path to a model"), file);
  scenario.model_config = load_model_config(scenario.model_source);

  const std::string dtype = root.required("dtype", "fp32, fp16 or bf16").choice({"fp32", "fp16", "bf16"});
  scenario.dtype = *parse_dtype(dtype);
  if (auto backend = root.optional("backend")) {
    const std::string choice = backend->choice({"auto", "cpu", "cuda"});
    scenario.backend = choice == "cpu"    ? BackendChoice::Cpu
                       : choice == "cuda" ? BackendChoice::Cuda
                                          : BackendChoice::Auto;
  }
  if (auto threads = root.optional("threads")) scenario.threads = static_cast<int>(threads->integer(0, kMaxCpuThreads));
  parse_workload(root.required("workload", "a mapping with requests, batch_size, prompt, new_tokens"),
                 scenario.model_config, scenario.workload);
  if (auto run = root.optional("run")) parse_run(*run, scenario);
  if (auto bugs = root.optional("bugs")) parse_bugs(*bugs, scenario);
  if (auto expected = root.optional("expected_slowdown")) parse_expected_slowdown(*expected, scenario);
  if (auto sweep = root.optional("sweep")) sweep->choice({"product", "zip"});  // read by lab/run/sweep.cpp
  return scenario;
}

namespace {

// The value at a dotted key ("workload.seed") of a rendered scenario, null where absent.
nlohmann::json value_at(const nlohmann::json& rendered, const std::string& dotted_key) {
  const nlohmann::json* node = &rendered;
  size_t begin = 0;
  while (begin <= dotted_key.size()) {
    const size_t end = std::min(dotted_key.find('.', begin), dotted_key.size());
    const std::string part = dotted_key.substr(begin, end - begin);
    if (!node->is_object() || !node->contains(part)) return nullptr;
    node = &(*node)[part];
    begin = end + 1;
  }
  return *node;
}

}  // namespace

std::vector<std::string> keys_changed_in_value(const Scenario& overridden, const Scenario& as_written) {
  const nlohmann::json after = scenario_to_json(overridden), before = scenario_to_json(as_written);
  std::vector<std::string> changed;
  for (const std::string& key : overridden.overridden_keys) {
    const bool listed = std::find(changed.begin(), changed.end(), key) != changed.end();  // set twice: named once
    if (!listed && value_at(after, key) != value_at(before, key)) changed.push_back(key);
  }
  return changed;
}

Scenario load_scenario(const fs::path& file, const std::vector<std::string>& assignments) {
  std::vector<ScenarioOverride> overrides;
  for (const std::string& assignment : assignments) overrides.push_back(parse_override(assignment));
  YAML::Node document = read_scenario_document(file);
  const YAML::Node as_written = YAML::Clone(document);
  for (const ScenarioOverride& override_value : overrides) apply_override(document, override_value, file);
  Scenario scenario = parse_scenario(document, file, overrides);
  if (overrides.empty()) return scenario;
  // A --set to the value the file already holds changes nothing the scenario's range was
  // written for: keep only the keys whose value differs. A file that is only valid with its
  // --set (nothing to compare with) keeps every key.
  try {
    scenario.overridden_keys = keys_changed_in_value(scenario, parse_scenario(as_written, file, {}));
  } catch (const InputError&) {
  }
  return scenario;
}

Scenario fixed_twin(const Scenario& scenario) {
  Scenario twin = scenario;
  twin.bugs = BugSet{};
  return twin;
}

}  // namespace decodelab
