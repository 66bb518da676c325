// Expansion of list-valued workload keys into the product of their values.
#include "lab/sweep.h"

#include "engine/errors.h"

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
  const YAML::Node workload = scenario["workload"];
  if (!workload || !workload.IsMap()) return keys;
  for (const auto& entry : workload) {
    const std::string key = entry.first.as<std::string>();
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
  const YAML::Node mode = scenario["sweep"];
  return mode && mode.IsScalar() && mode.Scalar() == "zip";
}

}  // namespace

std::vector<SweepPoint> expand_sweep(const YAML::Node& scenario, const std::string& file) {
  const std::vector<std::string> keys = swept_keys(scenario);
  SweepPoint base{"", {}, YAML::Clone(scenario)};
  if (base.scenario["sweep"]) base.scenario.remove("sweep");
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
