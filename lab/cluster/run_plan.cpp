// Points rendered for a run folder, each checked to read back as itself (see run_plan.h).
#include "lab/cluster/run_plan.h"

#include <stdexcept>

namespace decodelab {

namespace fs = std::filesystem;

namespace {

std::vector<ScenarioOverride> parsed_overrides(const std::vector<std::string>& assignments) {
  std::vector<ScenarioOverride> overrides;
  for (const std::string& assignment : assignments) overrides.push_back(parse_override(assignment));
  return overrides;
}

RunPoint recorded_point(const std::string& label, const std::vector<std::pair<std::string, std::string>>& swept,
                        const YAML::Node& document, const fs::path& file, const Scenario& scenario,
                        const std::vector<ScenarioOverride>& overrides) {
  YAML::Emitter emitter;
  emitter << document;
  RunPoint point{label, file.string(), swept, std::string(emitter.c_str()) + "\n"};
  const Scenario read_back = parse_scenario(parse_scenario_text(point.scenario_yaml, file), file, overrides);
  if (scenario_to_json(read_back) != scenario_to_json(scenario)) {
    throw std::runtime_error("the scenario of point '" + label + "' does not read back the same from YAML (" +
                             file.string() + "): it cannot be handed to another machine faithfully");
  }
  return point;
}

}  // namespace

RunPlan sweep_run_plan(const fs::path& file, const std::vector<SweepPoint>& points,
                       const std::vector<Scenario>& scenarios, const std::vector<std::string>& assignments,
                       const RunSettings& settings) {
  RunPlan plan{"sweep", scenarios.empty() ? file.stem().string() : scenarios.front().name, {}, assignments, settings};
  const std::vector<ScenarioOverride> overrides = parsed_overrides(assignments);
  for (size_t i = 0; i < points.size(); ++i)
    plan.points.push_back(
        recorded_point(points[i].label, points[i].values, points[i].scenario, file, scenarios[i], overrides));
  return plan;
}

RunPlan lab_run_plan(const std::vector<fs::path>& files, const std::vector<std::string>& assignments,
                     const RunSettings& settings) {
  RunPlan plan{"lab", "lab", {}, assignments, settings};
  const std::vector<ScenarioOverride> overrides = parsed_overrides(assignments);
  for (const fs::path& file : files) {
    // As load_scenario reads it: the document, then every --set.
    YAML::Node document = read_scenario_document(file);
    for (const ScenarioOverride& override_value : overrides) apply_override(document, override_value, file);
    const Scenario scenario = parse_scenario(document, file, overrides);
    plan.points.push_back(recorded_point(scenario.name, {}, document, file, scenario, overrides));
  }
  return plan;
}

}  // namespace decodelab
