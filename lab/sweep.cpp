// Expansion of list-valued workload keys into the product of their values.
#include "lab/sweep.h"

#include "engine/errors.h"
#include "lab/yaml_fields.h"

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

}  // namespace

std::vector<std::string> swept_keys(const YAML::Node& scenario) {
  std::vector<std::string> keys;
  if (!scenario.IsMap()) return keys;  // a scalar or a list has no workload (and [] would throw): validation says so
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
  next.scenario["workload"][key] = YAML::Clone(value);
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
    const size_t length = scenario["workload"][keys.front()].size();
    for (const std::string& key : keys) {
      if (scenario["workload"][key].size() != length) {
        throw InputError(file, scenario["workload"][key].Mark().line + 1, "workload." + key,
                         "sweep: zip needs lists of one length: " + keys.front() + " has " + std::to_string(length) +
                             " values, " + key + " has " + std::to_string(scenario["workload"][key].size()));
      }
    }
    std::vector<SweepPoint> points;
    for (size_t i = 0; i < length; ++i) {
      SweepPoint point = base;
      for (const std::string& key : keys) point = with_value(point, key, scenario["workload"][key][i]);
      points.push_back(std::move(point));
    }
    return points;
  }
  size_t combinations = 1;
  for (const std::string& key : keys) {
    combinations *= scenario["workload"][key].size();  // each factor ≥ 1; checked before it can overflow
    if (combinations > kMaxSweepPoints) {
      throw InputError(file, line_of(scenario["workload"], 0), "workload",
                       "the lists sweep more than " + std::to_string(kMaxSweepPoints) +
                           " combinations (split the sweep, or shorten a list)");
    }
  }
  std::vector<SweepPoint> points{base};
  for (const std::string& key : keys) {
    const YAML::Node values = scenario["workload"][key];
    std::vector<SweepPoint> expanded;
    for (const SweepPoint& point : points)
      for (const auto& value : values) expanded.push_back(with_value(point, key, value));
    points = std::move(expanded);
  }
  return points;
}

}  // namespace decodelab
