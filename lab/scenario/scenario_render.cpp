// A Scenario written back in its own schema (YAML for people, JSON for result files).
// The YAML is emitted in schema order and reloads to an equal Scenario; a bug that is on
// is always written with its option, so the rendering never depends on defaults.
#include <charconv>
#include <filesystem>

#include "lab/scenario/scenario.h"

namespace decodelab {

namespace {

std::string model_value(const ModelSource& source) {
  if (source.kind == ModelSourceKind::Catalog) return source.value;
  return std::filesystem::absolute(source.path).lexically_normal().string();
}

// Each bug as its YAML/JSON value: false, true, or {option: value}.
template <typename Visit>
void visit_bugs(const BugSet& bugs, Visit&& visit) {
  visit("no_kv_cache", bugs.no_kv_cache, "", "");
  visit("non_contiguous", bugs.non_contiguous, "mode", to_string(bugs.non_contiguous_mode));
  visit("host_sync", bugs.host_sync, "per", to_string(bugs.host_sync_per));
  visit("fp32_ops", bugs.fp32_ops, "scope", to_string(bugs.fp32_scope));
  visit("sequential_generation", bugs.sequential_generation, "", "");
}

}  // namespace

nlohmann::json workload_to_json(const Workload& workload) {
  nlohmann::json json = {{"requests", workload.requests},
                         {"batch_size", workload.batch_size},
                         {"new_tokens", workload.new_tokens},
                         {"seed", workload.seed},
                         {"host_overhead_us", workload.host_overhead_us}};
  if (workload.prompt_ids.empty()) {
    json["prompt_tokens"] = workload.prompt_tokens;
  } else {
    json["prompt_ids"] = workload.prompt_ids;
  }
  return json;
}

nlohmann::json bugs_to_json(const BugSet& bugs) {
  nlohmann::json json = nlohmann::json::object();
  visit_bugs(bugs, [&json](const char* name, bool on, const char* option, const char* value) {
    if (!on || !*option) {
      json[name] = on;
    } else {
      json[name] = {{option, value}};
    }
  });
  return json;
}

nlohmann::json run_policy_to_json(const Scenario& scenario) {
  const RepeatPolicy& policy = scenario.repeats;
  return {{"warmup", scenario.warmup},
          {"min_repeats", policy.min_repeats},
          {"max_repeats", policy.max_repeats},
          {"max_seconds", policy.max_seconds},
          {"target_ci", policy.target_ci},
          {"cuda_graphs", scenario.cuda_graphs}};
}

nlohmann::json scenario_to_json(const Scenario& scenario) {
  nlohmann::json json = {{"name", scenario.name},
          {"description", scenario.description},
          {"file", scenario.file.string()},
          {"model", model_value(scenario.model_source)},
          {"dtype", dtype_name(scenario.dtype)},
          {"backend", to_string(scenario.backend)},
          {"workload", workload_to_json(scenario.workload)},
          {"run", run_policy_to_json(scenario)},
          {"bugs", bugs_to_json(scenario.bugs)}};
  if (scenario.threads > 0) json["threads"] = scenario.threads;  // absent = every core, as in older results
  if (const auto& expected = scenario.expected_slowdown)
    json["expected_slowdown"] = {{"min", expected->min}, {"max", expected->max}, {"of", to_string(expected->of)}};
  return json;
}

namespace {

// The shortest text that reads back as the same double: 0.03, not yaml-cpp's 17 digits
// (0.029999999999999999), which say a precision no one wrote.
std::string shortest(double value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

}  // namespace

std::string scenario_to_yaml(const Scenario& scenario) {
  const Workload& workload = scenario.workload;
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << scenario.name;
  if (!scenario.description.empty()) out << YAML::Key << "description" << YAML::Value << scenario.description;
  out << YAML::Key << "model" << YAML::Value << model_value(scenario.model_source);
  out << YAML::Key << "dtype" << YAML::Value << dtype_name(scenario.dtype);
  out << YAML::Key << "backend" << YAML::Value << to_string(scenario.backend);
  if (scenario.threads > 0) out << YAML::Key << "threads" << YAML::Value << scenario.threads;

  out << YAML::Key << "workload" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "requests" << YAML::Value << workload.requests;
  out << YAML::Key << "batch_size" << YAML::Value << workload.batch_size;
  if (workload.prompt_ids.empty()) {
    out << YAML::Key << "prompt_tokens" << YAML::Value << workload.prompt_tokens;
  } else {
    out << YAML::Key << "prompt_ids" << YAML::Value << YAML::Flow << workload.prompt_ids;
  }
  out << YAML::Key << "new_tokens" << YAML::Value << workload.new_tokens;
  out << YAML::Key << "seed" << YAML::Value << workload.seed;
  out << YAML::Key << "host_overhead_us" << YAML::Value << shortest(workload.host_overhead_us);
  out << YAML::EndMap;

  out << YAML::Key << "run" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "warmup" << YAML::Value << scenario.warmup;
  out << YAML::Key << "min_repeats" << YAML::Value << scenario.repeats.min_repeats;
  out << YAML::Key << "max_repeats" << YAML::Value << scenario.repeats.max_repeats;
  out << YAML::Key << "max_seconds" << YAML::Value << shortest(scenario.repeats.max_seconds);
  out << YAML::Key << "target_ci" << YAML::Value << shortest(scenario.repeats.target_ci);
  if (scenario.cuda_graphs) out << YAML::Key << "cuda_graphs" << YAML::Value << true;
  out << YAML::EndMap;

  out << YAML::Key << "bugs" << YAML::Value << YAML::BeginMap;
  visit_bugs(scenario.bugs, [&out](const char* name, bool on, const char* option, const char* value) {
    out << YAML::Key << name << YAML::Value;
    if (!on || !*option) {
      out << on;
    } else {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << option << YAML::Value << value << YAML::EndMap;
    }
  });
  out << YAML::EndMap;
  if (const auto& expected = scenario.expected_slowdown) {
    out << YAML::Key << "expected_slowdown" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "min" << YAML::Value << shortest(expected->min);
    out << YAML::Key << "max" << YAML::Value << shortest(expected->max);
    out << YAML::Key << "of" << YAML::Value << to_string(expected->of);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace decodelab
