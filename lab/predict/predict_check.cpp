// Measured beside predicted (see predict_check.h). The measured figures are the medians
// over the timed repeats that `run` and `compare` report (lab/run/run_metrics.h), the slowdowns
// the median of the pairs' ratios as `compare` measures them; the
// predicted ones come from the same formulas applied to the predicted clocks.
#include "lab/predict/predict_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "lab/run/compare.h"
#include "lab/cli/progress.h"
#include "profiling/measure/core_round_trip.h"
#include "profiling/model/statistics.h"
#include "profiling/report/text_table.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

// A fixed number of repeats, the scenario's least (`run.repeats: N` sets it to N).
int check_repeats(const Scenario& scenario) { return std::max(scenario.repeats.min_repeats, 1); }

// Warm-ups, then repeats alternated between the loaded scenarios (one alone without bugs).
// A scenario that loads the first one's weights (a fixed twin's) shares them, as compare's do.
std::vector<RunResult> measure(const std::vector<Scenario>& scenarios, Backend& backend, const RunOptions& options) {
  std::vector<std::unique_ptr<LoadedScenario>> loaded;
  for (const Scenario& scenario : scenarios) {
    if (!loaded.empty() && same_weights(scenario, loaded.front()->scenario()))
      loaded.push_back(std::make_unique<LoadedScenario>(backend, scenario, options.max_memory_bytes, *loaded.front()));
    else
      loaded.push_back(std::make_unique<LoadedScenario>(backend, scenario, options.max_memory_bytes));
  }
  const Scenario& first = scenarios.front();
  const int repeats = check_repeats(first);
  std::vector<std::vector<GenerationResult>> runs(scenarios.size());
  for (int i = 0; i < std::max(first.warmup, 0); ++i)
    for (auto& scenario : loaded) scenario->generate(nullptr);
  const Progress progress(options.progress);
  for (int i = 0; i < repeats; ++i) {
    const std::string label =
        first.name + ": measuring, repeat " + std::to_string(i + 1) + "/" + std::to_string(repeats);
    progress.status(label);
    for (size_t k = 0; k < loaded.size(); ++k) {
      const size_t which = i % 2 == 0 ? k : loaded.size() - 1 - k;  // alternate which goes first
      runs[which].push_back(loaded[which]->generate(nullptr));
    }
    progress.finished(label + " done");
  }
  progress.clear();
  std::vector<RunResult> results;
  for (size_t k = 0; k < loaded.size(); ++k)
    results.push_back(summarize_run(scenarios[k], backend, loaded[k]->memory(), std::move(runs[k])));
  return results;
}

void add_figures(std::vector<CheckedFigure>& figures, const std::string& prefix, const RunMetrics& measured,
                 const ScenarioPrediction& predicted) {
  const Prediction& p = predicted.prediction;
  figures.push_back({prefix + "TTFT", "ms", measured.ttft_ms.median, p.timing.ttft_ms, std::nullopt});
  figures.push_back({prefix + "decode wall time per step", "ms", measured.decode_wall_ms_per_step.median,
                     p.decode_step_wall_ms(), std::nullopt});
  figures.push_back({prefix + "decode tok/s", "tok/s", measured.decode_tokens_per_s.median,
                     predicted.metrics.decode_tokens_per_s, std::nullopt});
  figures.push_back({prefix + "end-to-end", "ms", measured.end_to_end_s.median * 1e3, p.timing.total_ms, std::nullopt});
}

std::string value(double number, const std::string& unit) {
  if (unit == "x") return ratio_text(number);
  if (unit == "ms") return format_seconds(number * 1e-3);
  return format_number(number, 4) + " " + unit;
}

// The measured side with its interval where it has one: "3.35x ±4.0%", "3.35x ±31% noisy".
std::string measured_value(const CheckedFigure& figure) {
  std::string text = value(figure.measured, figure.unit);
  if (figure.measured_interval) text += " " + format_interval(*figure.measured_interval);
  return text;
}

// The measured slowdown with the interval of the pairs' ratios.
CheckedFigure slowdown_figure(const char* name, const Estimate& measured, double predicted) {
  CheckedFigure figure{name, "x", measured.median, predicted, std::nullopt};
  if (measured.samples > 0) figure.measured_interval = measured;
  return figure;
}

// "near 55 ns" or "far 440 ns".
std::string cores_text(double round_trip_ns) {
  return std::string(core_distance(round_trip_ns)) + " " + format_round_trip(round_trip_ns);
}

nlohmann::json figure_json(const CheckedFigure& figure) {
  nlohmann::json json = {{"name", figure.name},
                         {"unit", figure.unit},
                         {"measured", figure.measured},
                         {"predicted", figure.predicted},
                         {"error", figure.error()}};
  if (figure.measured_interval) {
    json["measured_relative_ci"] = figure.measured_interval->relative_ci();
    json["measured_low"] = figure.measured_interval->low;  // the interval's ends, as ratios
    json["measured_high"] = figure.measured_interval->high;
    json["measured_noisy"] = figure.measured_interval->noisy;
  }
  return json;
}

}  // namespace

PredictionCheck check_prediction(const Scenario& scenario, const DeviceSpec& device, Backend& backend,
                                 const RunOptions& options) {
  PredictionCheck check;
  check.scenario = scenario.name;
  check.device = device.name;
  check.repeats = check_repeats(scenario);
  if (device.measured) {
    check.roofs_core_round_trip_ns = device.measured->core_round_trip_ns;
    check.roofs_noisy = roofs_noisy(device);
    check.roofs_spread = device.measured->spread;
  }
  // The machine as the timed repeats find it (said on stderr when busy or far apart).
  const MachineState machine = check_machine_for_timing(backend, kernel_threads(scenario, options), /*warn=*/true,
                                                        /*notes=*/options.progress != ProgressMode::Off);
  check.core_round_trip_ns = machine.core_round_trip_ns;
  check.machine_contended = machine.contended;
  if (!scenario.bugs.any()) {
    const ScenarioPrediction predicted = predict_scenario(scenario, device);
    const std::vector<RunResult> measured = measure({scenario}, backend, options);
    add_figures(check.figures, "", measured[0].metrics, predicted);
    return check;
  }
  const SlowdownPrediction predicted = predict_slowdown(scenario, device);
  const std::vector<RunResult> measured = measure({fixed_twin(scenario), scenario}, backend, options);
  const RunMetrics& fixed = measured[0].metrics;
  const RunMetrics& buggy = measured[1].metrics;
  add_figures(check.figures, "fixed ", fixed, predicted.fixed);
  add_figures(check.figures, "buggy ", buggy, predicted.buggy);
  // The slowdowns as compare measures them: the median of the pairs' ratios.
  const Workload& workload = scenario.workload;
  const Estimate decode = workload.new_tokens > 1 ? paired_slowdown(measured[0].repeats, measured[1].repeats,
                                                                    SlowdownMetric::Decode, workload, scenario.repeats.target_ci)
                                                  : Estimate{};
  const Estimate end_to_end =
      paired_slowdown(measured[0].repeats, measured[1].repeats, SlowdownMetric::EndToEnd, workload, scenario.repeats.target_ci);
  check.decode_slowdown = slowdown_figure("decode_slowdown", decode, predicted.decode_slowdown);
  check.end_to_end_slowdown = slowdown_figure("end_to_end_slowdown", end_to_end, predicted.end_to_end_slowdown);
  return check;
}

std::string PredictionCheck::machine_text() const {
  const std::string noise = machine_noise(machine_contended, roofs_noisy);
  return noise.empty() ? "quiet" : noise;
}

std::string prediction_check_table(const PredictionCheck& check) {
  TextTable table({"figure", "measured", "predicted", "error"});
  auto add = [&](const CheckedFigure& figure) {
    table.add({figure.name, measured_value(figure), value(figure.predicted, figure.unit),
               figure.measured > 0 && figure.predicted > 0 ? signed_percent(figure.error()) : "-"});
  };
  for (const CheckedFigure& figure : check.figures) add(figure);
  if (check.decode_slowdown) add(*check.decode_slowdown);
  if (check.end_to_end_slowdown) add(*check.end_to_end_slowdown);
  std::ostringstream out;
  out << "check: " << check.scenario << " measured on this machine (median of " << check.repeats
      << " repeats) against the prediction on " << check.device << "; error = measured / predicted - 1\n";
  if (check.core_round_trip_ns > 0) {
    out << "cores: " << cores_text(check.core_round_trip_ns) << " round trip during the run";
    if (check.roofs_core_round_trip_ns > 0)
      out << ", " << cores_text(check.roofs_core_round_trip_ns) << " when the roofs were measured";
    out << " (profiling/measure/core_round_trip.h)\n";
  }
  out << "machine: ";
  if (check.machine_text() == "quiet") {
    out << "quiet (the machine check before the run found no contention, and the roofs priced with are not noisy)\n";
  } else {
    if (check.machine_contended) out << "busy before the run (the warning above says why)";
    if (check.machine_contended && check.roofs_noisy) out << "; ";
    if (check.roofs_noisy)
      out << "roofs measured on a noisy or contended machine (spread " << format_percent(check.roofs_spread) << ")";
    out << ": the errors hold the machine's noise as well as the model's misses\n";
  }
  out << table.str();
  return out.str();
}

std::string prediction_check_row_header() {
  return "| scenario | variant | decode slowdown measured | predicted | error | end-to-end slowdown measured | "
         "predicted | error | cores | machine |\n"
         "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |\n";
}

std::string prediction_check_row(const PredictionCheck& check, const std::string& variant) {
  std::ostringstream out;
  out << "| " << check.scenario << " | " << (variant.empty() ? "as shipped" : variant) << " | ";
  auto cells = [&](const CheckedFigure& figure) {
    out << measured_value(figure) << " | " << value(figure.predicted, figure.unit) << " | "
        << signed_percent(figure.error()) << " | ";
  };
  if (check.decode_slowdown) cells(*check.decode_slowdown);
  if (check.end_to_end_slowdown) cells(*check.end_to_end_slowdown);
  out << (check.core_round_trip_ns > 0 ? cores_text(check.core_round_trip_ns) : "-") << " | " << check.machine_text()
      << " |";
  return out.str() + "\n";
}

nlohmann::json prediction_check_json(const PredictionCheck& check) {
  nlohmann::json figures = nlohmann::json::array();
  for (const CheckedFigure& figure : check.figures) figures.push_back(figure_json(figure));
  nlohmann::json json = {{"scenario", check.scenario}, {"device", check.device}, {"repeats", check.repeats},
                         {"figures", figures}};
  if (check.decode_slowdown) json["decode_slowdown"] = figure_json(*check.decode_slowdown);
  if (check.end_to_end_slowdown) json["end_to_end_slowdown"] = figure_json(*check.end_to_end_slowdown);
  if (check.core_round_trip_ns > 0) json["core_round_trip_ns"] = check.core_round_trip_ns;
  if (check.roofs_core_round_trip_ns > 0) json["roofs_core_round_trip_ns"] = check.roofs_core_round_trip_ns;
  json["machine_contended"] = check.machine_contended;
  json["roofs_noisy"] = check.roofs_noisy;
  if (check.roofs_spread > 0) json["roofs_spread"] = check.roofs_spread;
  return json;
}

}  // namespace decodelab
