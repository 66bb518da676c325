// `decodelab predict SCENARIO`: what a run of the scenario will report, before running it —
// its op stream recorded without running kernels and priced against a device's roofs and
// fixed costs; with bugs, its fixed twin too and the predicted slowdown. --device takes any
// configs/devices file or `measured` (this machine); --check also runs the scenario here
// and prints measured, predicted and the error of each figure. A sweep scenario (list-valued
// workload keys) is predicted point by point, one row each.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/errors.h"
#include "lab/cli/commands.h"
#include "lab/output_files.h"
#include "lab/paths.h"
#include "lab/predict/predict.h"
#include "lab/predict/predict_check.h"
#include "lab/predict/row_prediction.h"
#include "lab/run/runner.h"
#include "lab/run/sweep.h"
#include "profiling/measure/default_roofs.h"
#include "profiling/report/text_table.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

struct PointScenario {
  std::string label;  // the sweep point ("batch_size=8"), empty for a plain scenario
  Scenario scenario;
};

// Every point of the scenario: one for a plain scenario, one per combination of a sweep.
std::vector<PointScenario> load_points(const PredictArguments& arguments) {
  const std::filesystem::path file = resolve_scenario_argument(arguments.scenario);
  std::vector<ScenarioOverride> overrides;
  for (const std::string& assignment : arguments.assignments) overrides.push_back(parse_override(assignment));
  YAML::Node document = read_scenario_document(file);
  for (const ScenarioOverride& override_value : overrides) apply_override(document, override_value, file);
  std::vector<PointScenario> points;
  for (const SweepPoint& point : expand_sweep(document, file.string()))
    points.push_back({point.label, parse_scenario(point.scenario, file, overrides)});
  return points;
}

std::string ratio(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, value < 10 ? "%.2fx" : "%.1fx", value);
  return value > 0 ? buffer : "-";
}

// One row per sweep point: the headline figures and, with bugs, the slowdowns.
class SweepTable {
 public:
  explicit SweepTable(bool bugs)
      : bugs_(bugs),
        table_(bugs ? std::vector<std::string>{"point", "decode wall/step", "decode tok/s", "total", "decode bound",
                                                "decode slowdown", "end-to-end slowdown"}
                    : std::vector<std::string>{"point", "TTFT", "decode wall/step", "decode busy/step", "decode tok/s",
                                               "total", "decode bound"}) {}

  void add(const std::string& label, const ScenarioPrediction& p, const SlowdownPrediction* slowdown) {
    const PhasePrediction* decode = p.prediction.phase(Phase::Decode);
    const std::string bound = decode ? predicted_bound_name(decode->bound) : "-";
    const std::string wall = format_seconds(p.prediction.decode_step_wall_ms() * 1e-3);
    const std::string rate = format_number(p.metrics.decode_tokens_per_s, 4);
    const std::string total = format_seconds(p.prediction.timing.total_ms * 1e-3);
    if (bugs_ && slowdown) {
      table_.add({label, wall, rate, total, bound, ratio(slowdown->decode_slowdown), ratio(slowdown->end_to_end_slowdown)});
    } else {
      table_.add({label, format_seconds(p.prediction.timing.ttft_ms * 1e-3), wall,
                  format_seconds(p.prediction.decode_step_busy_ms() * 1e-3), rate, total, bound});
    }
  }
  std::string str() const { return table_.str(); }

 private:
  bool bugs_;
  TextTable table_;
};

}  // namespace

void execute_predict(const PredictArguments& arguments) {
  const std::vector<PointScenario> points = load_points(arguments);
  const Scenario& first = points.front().scenario;
  if (!arguments.json_file.empty()) check_output_path(arguments.json_file, "--json");
  if (!arguments.row.empty() && !first.bugs.any())
    throw InputError("--row", 0, arguments.row, "a row compares slowdowns: the scenario needs a bug");
  const bool on_this_machine = arguments.device.empty() || arguments.device == "measured";
  if (arguments.check && !on_this_machine) {
    throw InputError("--device", 0, arguments.device,
                     "--check measures on this machine, so the prediction must be priced for it: leave --device out "
                     "(or give measured)");
  }

  // The device: a named spec, or the one this machine's runs are held to.
  RunOptions run_options;
  if (!arguments.backend.empty())
    run_options.backend = arguments.backend == "cuda" ? BackendKind::Cuda : BackendKind::Cpu;
  if (arguments.device == "measured" && !run_options.backend) run_options.backend = BackendKind::Cpu;
  run_options.threads = arguments.threads;
  run_options.progress = progress_mode(arguments.quiet);
  std::unique_ptr<Backend> backend;
  DeviceSpec device;
  // The roofs of the kernel threads the run uses: --threads, else the scenario's `threads:`
  // (host_sync runs on one), as compare and --check time it.
  const int threads = kernel_threads(first, run_options);
  if (on_this_machine) {
    backend = open_backend(first, run_options);
    device = default_device_spec(*backend, threads, arguments.quiet ? nullptr : &std::cerr);
  } else {
    device = prediction_device(arguments.device, threads, nullptr);
  }
  if (arguments.check) {
    warn_if_unoptimised_build();
    for (const PointScenario& point : points) check_memory_cap(point.scenario, run_options);
  }

  std::string single_table, checks, rows, header;
  nlohmann::json json = nlohmann::json::array();
  SweepTable sweep(first.bugs.any());
  for (const PointScenario& point : points) {
    const Scenario& scenario = point.scenario;
    nlohmann::json entry;
    std::optional<SlowdownPrediction> slowdown;
    std::optional<ScenarioPrediction> alone;
    const std::string variant = point.label.empty() ? arguments.row : arguments.row + " " + point.label;
    if (scenario.bugs.any()) {
      slowdown = predict_slowdown(scenario, device);
      entry = prediction_json(*slowdown, device);
      if (!arguments.check) rows += prediction_row(*slowdown, device, variant);
    } else {
      alone = predict_scenario(scenario, device);
      entry = prediction_json(*alone, device);
    }
    if (points.size() > 1) {
      const ScenarioPrediction& shown = slowdown ? slowdown->buggy : *alone;
      if (header.empty())
        header = prediction_header(device, shown.prediction.inputs) + "  " + first.name + ": one row per sweep point\n\n";
      sweep.add(point.label, shown, slowdown ? &*slowdown : nullptr);
      entry["point"] = point.label;
    } else {
      single_table = slowdown ? prediction_table(*slowdown, device) : prediction_table(*alone, device);
    }
    if (arguments.check) {
      const PredictionCheck check = check_prediction(scenario, device, *backend, run_options);
      entry["check"] = prediction_check_json(check);
      rows += prediction_check_row(check, variant);
      checks += "\n" + (point.label.empty() ? "" : point.label + ": ") + prediction_check_table(check);
    }
    json.push_back(entry);
  }
  std::string text;
  if (!arguments.row.empty()) {
    const std::string header = arguments.check ? prediction_check_row_header() : prediction_row_header();
    text = (arguments.row_header ? header : "") + rows;
  } else {
    text = (points.size() > 1 ? header + sweep.str() : single_table) + checks;
  }

  StagedOutputs outputs;
  if (!arguments.json_file.empty()) outputs.stage(arguments.json_file, (points.size() == 1 ? json[0] : json).dump(2) + "\n");
  outputs.commit();
  if (!arguments.quiet) {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }
}

}  // namespace decodelab
