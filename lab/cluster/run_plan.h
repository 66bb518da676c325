// The work a sweep or the lab hands to a scheduler: its points in the order the local
// command runs them, each as the scenario document it runs (every --set applied) rendered
// to YAML. Each rendering is read back and validated before anything is written, and
// must give the very scenario the local command would run, or the plan is refused.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "lab/cluster/run_folder.h"
#include "lab/scenario/scenario.h"
#include "lab/run/sweep.h"

namespace decodelab {

struct RunPlan {
  std::string command;  // "sweep" | "lab"
  std::string name;     // for the job name and the default folder: the scenario's name, or "lab"
  std::vector<RunPoint> points;
  std::vector<std::string> overrides;  // every --set, as given
  RunSettings settings;
};

// A sweep's points (expand_sweep's, and the scenarios parsed from them).
RunPlan sweep_run_plan(const std::filesystem::path& file, const std::vector<SweepPoint>& points,
                       const std::vector<Scenario>& scenarios, const std::vector<std::string>& assignments,
                       const RunSettings& settings);
// The lab's bug scenarios, one point each.
RunPlan lab_run_plan(const std::vector<std::filesystem::path>& files, const std::vector<std::string>& assignments,
                     const RunSettings& settings);

}  // namespace decodelab
