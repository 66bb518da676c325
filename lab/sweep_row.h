// One sweep point's row: run the point's scenario on an open backend, analyse its trace
// against the device's roofs, and build the row a sweep's results file holds (the run's
// result JSON plus `swept` and `decode_roofline`), and the table line printed for it.
// Shared by the local sweep (lab/command_sweep.cpp) and a Slurm array task
// (lab/run_point.h), so that a row is the same row wherever it ran.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "lab/runner.h"
#include "lab/scenario.h"
#include "lab/sweep.h"
#include "profiling/device_spec.h"

namespace decodelab {

// The point's swept values as its row holds them: {"batch_size": "8", ...}.
nlohmann::json swept_values_json(const SweepPoint& point);

// What --resume matches a row on: the same work is the same scenario (swept values
// included) on the same backend.
nlohmann::json sweep_row_key(const SweepPoint& point, const Scenario& scenario, const std::string& backend_name);

struct SweepRow {
  RunResult result;
  nlohmann::json json;  // run_result_json + "swept" + "decode_roofline" (absent: no decode phase) + the prediction
                        // (lab/row_prediction.h: predicted_decode_tokens_per_s, ...)
};

// Runs the point on `backend` (opened with open_backend) and reads its decode phase
// against `spec`. `options.sink` is replaced by the point's own trace.
SweepRow run_sweep_point(const SweepPoint& point, const Scenario& scenario, RunOptions options, Backend& backend,
                         const DeviceSpec& spec);

// The table: the swept keys' columns, run_table_header()'s, the decode phase's roofline
// reading, then the predicted decode tok/s and its error; one line per row.
std::string sweep_table_header(const SweepPoint& point);
std::string sweep_table_row(const SweepPoint& point, const Scenario& scenario, const RunResult& result,
                            const nlohmann::json& row);
// The same line from a row read back from a results file (a resumed or collected row).
std::string sweep_table_row(const SweepPoint& point, const Scenario& scenario, const nlohmann::json& row);

}  // namespace decodelab
