// Expansion of list-valued keys into the product of their values. A swept key is a
// top-level run setting (backend, threads, dtype) or a workload key; each is found and
// set through setting_node(), so the rest of the expansion does not care which.
#include "lab/run/sweep.h"

#include <algorithm>

#include "engine/base/errors.h"
#include "lab/scenario/yaml_fields.h"

namespace decodelab {

namespace {

bool is_swept(const std::string& key, const YAML::Node& value) {
  if (!value.IsSequence() || value.size() == 0) return false;
  if (key == "prompt_ids") return value[0].IsSequence();
  return true;
}

std::string scalar_text(const YAML::Node& value) {
  if (value.IsScalar()) return value.Scalar();
  YAML::Emitter emitter;
  emitter << YAML::Flow << value;
  return emitter.c_str();
}

bool is_run_setting(const std::string& key) {
  return std::find(kSweptSettings.begin(), kSweptSettings.end(), key) != kSweptSettings.end();
}

// The node holding a swept key's value: top level for a run setting, else under workload.
YAML::Node setting_node(const YAML::Node& scenario, const std::string& key) {
  return is_run_setting(key) ? scenario[key] : scenario["workload"][key];
}

}  // namespace

std::vector<std::string> swept_keys(const YAML::Node& scenario) {
  std::vector<std::string> keys;
  if (!scenario.IsMap()) return keys;  // a scalar or a list has no workload (and [] would throw): validation says so
  for (const char* setting : kSweptSettings) {
    const YAML::Node value = scenario[setting];
    if (value && is_swept(setting, value)) keys.push_back(setting);
  }
  const YAML::Node workload = scenario["workload"];
  if (!workload || !workload.IsMap()) return keys;
  for (const auto& entry : workload) {
    if (!entry.first.IsScalar()) continue;  // not a key of ours: validation reports it
    const std::string key = entry.first.Scalar();
    if (is_swept(key, entry.second)) keys.push_back(key);
  }
  return keys;
}

namespace {

SweepPoint with_value(const SweepPoint& point, const std::string& key, const YAML::Node& value) {
  SweepPoint next{point.label, point.values, YAML::Clone(point.scenario)};
  if (is_run_setting(key)) {
    next.scenario[key] = YAML::Clone(value);
  } else {
    next.scenario["workload"][key] = YAML::Clone(value);
  }
  const std::string text = scalar_text(value);
  next.values.emplace_back(key, text);
  next.label += (next.label.empty() ? "" : " ") + key + "=" + text;
  return next;
}

bool zipped(const YAML::Node& scenario) {
  if (!scenario.IsMap()) return false;
  const YAML::Node mode = scenario["sweep"];
  return mode && mode.IsScalar() && mode.Scalar() == "zip";
}

}  // namespace

std::vector<SweepPoint> expand_sweep(const YAML::Node& scenario, const std::string& file) {
  const std::vector<std::string> keys = swept_keys(scenario);
  SweepPoint base{"", {}, YAML::Clone(scenario)};
  if (base.scenario.IsMap() && base.scenario["sweep"]) base.scenario.remove("sweep");
  if (zipped(scenario) && !keys.empty()) {
    const size_t length = setting_node(scenario, keys.front()).size();
    for (const std::string& key : keys) {
      const YAML::Node values = setting_node(scenario, key);
      if (values.size() != length) {
        throw InputError(file, values.Mark().line + 1, is_run_setting(key) ? key : "workload." + key,
                         "sweep: zip needs lists of one length: " + keys.front() + " has " + std::to_string(length) +
                             " values, " + key + " has " + std::to_string(values.size()));
      }
    }
    std::vector<SweepPoint> points;
    for (size_t i = 0; i < length; ++i) {
      SweepPoint point = base;
      for (const std::string& key : keys) point = with_value(point, key, setting_node(scenario, key)[i]);
      points.push_back(std::move(point));
    }
    return points;
  }
  size_t combinations = 1;
  for (const std::string& key : keys) {
    combinations *= setting_node(scenario, key).size();  // each factor ≥ 1; checked before it can overflow
    if (combinations > kMaxSweepPoints) {
      throw InputError(file, line_of(scenario["workload"], 0), "workload",
                       "the lists sweep more than " + std::to_string(kMaxSweepPoints) +
                           " combinations (split the sweep, or shorten a list)");
    }
  }
  std::vector<SweepPoint> points{base};
  for (const std::string& key : keys) {
    const YAML::Node values = setting_node(scenario, key);
    std::vector<SweepPoint> expanded;
    for (const SweepPoint& point : points)
      for (const auto& value : values) expanded.push_back(with_value(point, key, value));
    points = std::move(expanded);
  }
  return points;
}

}  // namespace decodelab
