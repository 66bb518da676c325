// Predictions of scenarios: the scenario's op stream recorded on the dry-run device (the
// engine's own decode loop, every bug as configured, no kernel run) and priced against a
// device's roofs and fixed costs (profiling/model/prediction.h). A buggy scenario is predicted
// with its fixed twin, and the slowdown is read off the two predictions with the same
// definitions a measurement uses: decode_slowdown is fixed decode tok/s over buggy decode
// tok/s, end_to_end_slowdown is buggy total time over fixed total time.
// compare, lab and sweep call predict_scenario / predict_slowdown to set a prediction
// beside each measurement.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lab/run/run_metrics.h"
#include "lab/scenario/scenario.h"
#include "profiling/device_spec.h"
#include "profiling/model/prediction.h"

namespace decodelab {

struct ScenarioPrediction {
  Scenario scenario;
  Prediction prediction;
  RepeatMetrics metrics;  // tok/s, step, TTFT, total, GB/s: as for a measured repeat (lab/run/run_metrics.h)
};

ScenarioPrediction predict_scenario(const Scenario& scenario, const DeviceSpec& device);

struct SlowdownPrediction {
  ScenarioPrediction buggy;
  ScenarioPrediction fixed;
  double decode_slowdown = 0;      // fixed decode tok/s / buggy decode tok/s (0 without decode steps)
  double end_to_end_slowdown = 0;  // buggy total / fixed total
};

// The scenario and its fixed twin (every bug off) on one device.
SlowdownPrediction predict_slowdown(const Scenario& buggy, const DeviceSpec& device);

// The device a prediction is priced against: a configs/devices name or YAML path, or
// "measured" (this machine's calibration at `threads`, as runs use it; made first, said on
// stderr, where there is none). Progress of that calibration goes to `progress`.
DeviceSpec prediction_device(const std::string& name_or_measured, int threads, std::ostream* progress);

// What a prediction rests on: the device, its roofs, fixed costs and cache, and their origins.
std::string prediction_header(const DeviceSpec& device, const PredictionInputs& inputs);
// Console table and JSON of one prediction, or of a scenario with its fixed twin.
std::string prediction_table(const ScenarioPrediction& prediction, const DeviceSpec& device);
std::string prediction_table(const SlowdownPrediction& prediction, const DeviceSpec& device);
// One markdown row of a slowdown table (docs/prediction.md's GPU table): scenario,
// variant, device, decode_slowdown, end_to_end_slowdown, what bounds fixed and buggy decode.
std::string prediction_row_header();
std::string prediction_row(const SlowdownPrediction& prediction, const DeviceSpec& device, const std::string& variant);
// The printers' number formats: a slowdown ("1.90x", "12.3x"; "-" when not positive), an
// error or change ("+13%"), a count per step ("16", "2.50").
std::string ratio_text(double value);
std::string signed_percent(double fraction);
std::string count_text(double count);
nlohmann::json prediction_json(const ScenarioPrediction& prediction);
nlohmann::json prediction_json(const SlowdownPrediction& prediction, const DeviceSpec& device);
nlohmann::json prediction_json(const ScenarioPrediction& prediction, const DeviceSpec& device);

}  // namespace decodelab
