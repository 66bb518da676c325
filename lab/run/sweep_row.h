// One sweep point's row: run the point's scenario on an open backend, analyse its trace
// against the device's roofs, and build the row a sweep's results file holds (the run's
// result JSON plus `swept` and `decode_roofline`), and the table line printed for it.
// Shared by the local sweep (lab/cli/command_sweep.cpp) and a Slurm array task
// (lab/cluster/run_point.h), so that a row is the same row wherever it ran.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "lab/run/runner.h"
#include "lab/scenario/scenario.h"
#include "lab/run/sweep.h"
#include "profiling/model/analysis.h"
#include "profiling/device_spec.h"
#include "profiling/measure/machine_check.h"

namespace decodelab {

// The point's swept values as its row holds them: {"batch_size": "8", ...}.
nlohmann::json swept_values_json(const SweepPoint& point);

// What --resume matches a row on: the same work is the same scenario (swept values
// included) on the same backend.
nlohmann::json sweep_row_key(const SweepPoint& point, const Scenario& scenario, const std::string& backend_name);

struct SweepRow {
  RunResult result;
  nlohmann::json json;  // run_result_json + "swept" + "decode_roofline" (absent: no decode phase) + the prediction
                        // (lab/predict/row_prediction.h: predicted_decode_tokens_per_s, ...)
};

// What a sweep's points share: the machine, checked before the first point is timed and
// recorded in every row, and the roofs the points are read against, taken after that check
// (the calibration; one made first records the check). Empty members are filled by the first
// point; a caller that checked and read the roofs already (a Slurm task) fills them itself.
struct SweepContext {
  std::optional<MachineState> machine;
  std::optional<DeviceSpec> spec;  // never measured again: a point above its roof is reported in its row
};

// Runs the point on `backend` (opened with open_backend) and reads its decode phase
// against `context.spec`. `options.sink` is replaced by the point's own trace.
SweepRow run_sweep_point(const SweepPoint& point, const Scenario& scenario, RunOptions options, Backend& backend,
                         SweepContext& context);

// The row's "decode_roofline": the decode phase's intensity (from the trace), then its
// limiter and % of roof read from the row's own medians against a roof decode can reach
// (profiling/model/decode_reading.h: the decode matvec's rate, the copy's beside it), the ridge
// point, and `above_roof` ("in cache" or "roof suspect") when the point sits above its roof.
// Null without a decode phase.
nlohmann::json decode_roofline_json(const RunAnalysis& analysis, const RunMetrics& metrics, DType dtype);

// The cells of a row's decode_roofline as tables print them: the limiter, with the one it
// is near ("memory, near latency"), and % of roof with why a point is above it ("132% (in
// cache)").
std::string decode_limiter_cell(const nlohmann::json& decode_roofline);
std::string decode_roof_fraction_cell(const nlohmann::json& decode_roofline);

// The table: the swept keys' columns, run_table_header()'s, the decode phase's roofline
// reading, then the predicted decode tok/s and its error; one line per row.
std::string sweep_table_header(const SweepPoint& point);
std::string sweep_table_row(const SweepPoint& point, const Scenario& scenario, const RunResult& result,
                            const nlohmann::json& row);
// The same line from a row read back from a results file (a resumed or collected row).
std::string sweep_table_row(const SweepPoint& point, const Scenario& scenario, const nlohmann::json& row);

}  // namespace decodelab
