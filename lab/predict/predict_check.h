// Holding a prediction to a measurement: the scenario (and, with bugs, its fixed twin,
// repeats alternated on one backend as compare does) is run on this machine and each
// figure a run reports is printed measured, predicted and the prediction's error
// (measured / predicted - 1, as compare and lab report it). The device the prediction is
// priced against must be this machine's: its measured roofs and fixed costs (CPU), or the
// spec of the GPU it runs on.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/predict/predict.h"
#include "lab/predict/row_prediction.h"
#include "lab/run/runner.h"

namespace decodelab {

struct CheckedFigure {
  std::string name;  // "fixed decode tok/s", "decode_slowdown", ...
  std::string unit;  // "ms", "tok/s", "x"
  double measured = 0;
  double predicted = 0;
  // The measured side's interval, where it has one (the slowdowns: the pairs' ratios),
  // printed as compare prints it (format_interval: "±4.0%", "±31% noisy").
  std::optional<Estimate> measured_interval;
  double error() const { return prediction_error(measured, predicted); }  // measured / predicted - 1
};

struct PredictionCheck {
  std::string scenario;
  std::string device;  // the device spec's name
  std::vector<CheckedFigure> figures;
  std::optional<CheckedFigure> decode_slowdown;      // scenarios with bugs
  std::optional<CheckedFigure> end_to_end_slowdown;  // scenarios with bugs
  int repeats = 0;
  // How far apart the kernel threads' cores were before timing, and when the roofs were
  // measured (profiling/measure/core_round_trip.h); 0 = not probed.
  double core_round_trip_ns = 0;
  double roofs_core_round_trip_ns = 0;
  // Was the machine quiet? The machine check just before the repeats (contended: busy),
  // and the roofs the prediction is priced with (measured on a noisy or contended machine,
  // their largest spread). An error taken on a busy machine or priced with noisy roofs
  // holds the machine's noise as well as the model's misses.
  bool machine_contended = false;
  bool roofs_noisy = false;
  double roofs_spread = 0;
  // "quiet", or what was not: "busy", "roofs noisy" or both.
  std::string machine_text() const;
};

// Runs and predicts `scenario` (and its fixed twin when it has bugs) on `backend`.
PredictionCheck check_prediction(const Scenario& scenario, const DeviceSpec& device, Backend& backend,
                                 const RunOptions& options);

std::string prediction_check_table(const PredictionCheck& check);
// One markdown row for an accuracy table (scenarios with bugs): scenario, variant, then
// measured (± its interval) / predicted / error of decode_slowdown and of
// end_to_end_slowdown, then the cores' distance during the run ("near 55 ns", "far 440
// ns", "-" where not probed), then the machine (PredictionCheck::machine_text).
std::string prediction_check_row(const PredictionCheck& check, const std::string& variant);
std::string prediction_check_row_header();
nlohmann::json prediction_check_json(const PredictionCheck& check);

}  // namespace decodelab
