// The prediction beside a measured row: what `compare`, `lab` and `sweep` print, write and
// report next to each measurement. For a scenario with bugs, the slowdown the model
// (lab/predict/predict.h) predicts for this device — this machine's measured roofs and fixed costs
// on the CPU, the matching device file for a GPU — and for reference devices (`--predict-on`),
// the error of the prediction (measured / predicted - 1, so +0.13 reads "the run was 13%
// slower than predicted"), a verdict against it on the slowdown the range verdict judges
// (the scenario's expected_slowdown.of), whether the prediction lies inside that measured
// figure's 95% interval, and one sentence naming the numbers the model used. For a sweep
// point, its predicted decode tok/s.
//
// Non-obvious choice: the sentence is built from the difference between the buggy and the
// fixed prediction, per decode step where both take the same steps and per token where they
// do not (sequential generation), split by what the time went to (reads, dispatch, bytes,
// FLOPs) — so a combination of bugs reads as the sum of its mechanisms, with no per-bug text.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/scenario/scenario.h"
#include "profiling/model/statistics.h"
#include "profiling/device_spec.h"

namespace decodelab {

// The reference GPU a slowdown is predicted on when `--predict-on` is not given.
inline const std::vector<std::string>& default_reference_devices() {
  static const std::vector<std::string> names = {"h200"};
  return names;
}
// The device files behind `--predict-on` names (or YAML paths); an unknown name is an
// InputError naming `option` and the known devices (exit 2), before any run.
std::vector<DeviceSpec> reference_devices(const std::vector<std::string>& names, const std::string& option);
// One device file by name or path, for an option (`--device h200`): an unknown name is an
// InputError naming the option, with "did you mean" and the known names.
DeviceSpec named_device(const std::string& name, const std::string& option);

// One device's predicted slowdown of a scenario with bugs, and what it comes from.
struct DeviceSlowdown {
  std::string device;               // the device spec's name
  double decode_slowdown = 0;       // predicted fixed decode tok/s / buggy decode tok/s
  double end_to_end_slowdown = 0;   // predicted buggy total / fixed total
  std::string bound;                // what bounds the buggy decode phase ("host dispatch", ...)
  std::string unit;                 // "step" (both take the same decode steps) or "token"
  double fixed_ms_per_unit = 0;     // the fixed run's decode time per unit
  double added_ms_per_unit = 0;     // what the bugs add to it
  std::string mechanism;            // "16 device-to-host reads per step × 1.2 µs round trip + the drained queue"
};
DeviceSlowdown predict_device_slowdown(const Scenario& buggy, const DeviceSpec& device);

// How far a measured slowdown may sit from the prediction and still be "as predicted":
// the accuracy the model is held to on a quiet machine (docs/prediction.md).
constexpr double kPredictionTolerance = 0.20;
// A measured rate this many times below its prediction is suspect: far outside anything the
// model's tolerance covers, the size of a run whose cores went to other work (a model that
// is wrong by that much is worth a look too). Said on stderr, in the row ("suspect") and the table.
constexpr double kSuspectBelowPrediction = 3.0;
// "decode tok/s 458.6 is 25x below the 11,335 predicted: ..." or "" when not suspect.
std::string suspect_below_prediction(const std::string& figure, double measured, double predicted);

// measured / predicted - 1 (0 when nothing was predicted).
double prediction_error(double measured, double predicted);

// Was the machine quiet for a check of the model? "" when it was; else what was not, joined
// by ", ": "busy" (the machine check before the runs found contention), "roofs noisy" (the
// measured roofs the prediction is priced with came from a noisy or contended machine),
// "device waiting on the host 23%" (the larger of the two sides' decode device time spent idle for a
// stalled host, from LimiterThresholds::host_starved_fraction up: the model assumes a host
// with a core of its own). An error taken on a noisy machine holds the machine's noise as
// well as the model's misses, so every verdict against a prediction carries it
// (`predict --check` rows, compare, lab).
std::string machine_noise(bool machine_contended, bool roofs_noisy, double host_stall_fraction = 0);
// The roofs' half of it for a device: its measured roofs were noisy (false for a GPU spec).
bool roofs_noisy(const DeviceSpec& device);

struct RowPrediction {
  std::string unavailable;  // why there is no prediction (e.g. a device file without fixed costs); else empty
  DeviceSlowdown here;
  double decode_slowdown_error = 0;      // measured decode_slowdown / predicted - 1
  double end_to_end_slowdown_error = 0;  // measured end-to-end slowdown / predicted - 1
  SlowdownMetric of = SlowdownMetric::Decode;  // the figure the verdict judges: the range verdict's (headline's)
  Estimate measured;                     // that figure as measured, with its 95% interval
  bool within_interval = false;          // the predicted figure lies inside that interval
  std::string verdict;                   // "as predicted", "above prediction", "below prediction"
  std::string noise;                     // machine_noise(): "" on a quiet machine, else "busy", "roofs noisy", ...
  std::vector<DeviceSlowdown> elsewhere; // --predict-on
  std::string sentence;                  // "host_sync: 16 reads per step × ...: predicted +0.9 ms per step here (1.9x); on h200 ..."

  double predicted() const;  // here, of `of`
  double error() const;      // of `of`
};

// A device's predicted slowdown of one metric.
double predicted_slowdown(const DeviceSlowdown& device, SlowdownMetric metric);
// A device's name as text and pages for people say it: this machine's measured roofs are
// named "measured-HOST" in JSON, "this machine (measured roofs)" in words; a device file's name as it is.
std::string device_in_words(const std::string& device);

// The prediction of `buggy` on `here` set beside its measured slowdowns, and on each
// reference device (names as for reference_devices); the verdict judges the slowdown `of`
// (the one the scenario's range names, as the range verdict does). A device the model
// cannot price (no fixed costs, or a reference file that cannot be read) gives
// `unavailable`: the measurement stands without it rather than failing after the runs.
RowPrediction predict_row(const Scenario& buggy, const DeviceSpec& here, const Estimate& measured_decode_slowdown,
                          const Estimate& measured_end_to_end_slowdown, SlowdownMetric of,
                          const std::vector<std::string>& elsewhere);

// Into a row's JSON: predicted_decode_slowdown, predicted_end_to_end_slowdown,
// decode_slowdown_prediction_error, end_to_end_slowdown_prediction_error, and
// "prediction": {device, bound, unit, fixed_ms_per_unit, added_ms_per_unit, mechanism,
// verdict, of, within_interval, tolerance, sentence, elsewhere: [...]}, plus "noise" when
// the machine was not quiet.
void add_row_prediction_json(nlohmann::json& row, const RowPrediction& prediction);
// Back from a row (a resumed or collected lab row); nullopt for a row written without one.
std::optional<RowPrediction> row_prediction_from_json(const nlohmann::json& row, const std::string& file);

// Table cells, all of the judged slowdown (`of`): "| predicted | error | vs prediction |" then
// one "| on DEVICE |" per reference device.
std::string prediction_columns_header(const std::vector<std::string>& elsewhere);
std::string prediction_columns_rule(const std::vector<std::string>& elsewhere);
std::string prediction_cells(const std::optional<RowPrediction>& prediction, const std::vector<std::string>& elsewhere);
std::string prediction_html_cells(const std::optional<RowPrediction>& prediction,
                                  const std::vector<std::string>& elsewhere);
// The reference devices named in any of the rows, in first-seen order.
std::vector<std::string> elsewhere_devices(const std::vector<const RowPrediction*>& predictions);
// compare's lines: the predicted slowdowns beside the measured ones, their errors, the
// verdict and the sentence.
std::string prediction_summary(const RowPrediction& prediction, const Estimate& measured_decode_slowdown,
                               const Estimate& measured_end_to_end_slowdown);
// A paragraph for a report page.
std::string prediction_html(const RowPrediction& prediction);

// A sweep point: its predicted decode tok/s on `device` set into the row beside the measured
// one (predicted_decode_tokens_per_s, decode_tokens_per_s_prediction_error, prediction:
// {device, decode_bound}, and "suspect" when the measured rate is kSuspectBelowPrediction times
// below); a device without fixed costs gives prediction: {unavailable}.
void add_sweep_prediction_json(nlohmann::json& row, const Scenario& scenario, const DeviceSpec& device,
                               double measured_decode_tokens_per_s);
// A sweep table's cells from such a row: "| predicted tok/s | error |" ("| - | - |" without one).
std::string sweep_prediction_cells(const nlohmann::json& row);

}  // namespace decodelab
