// Printers: they only format a RunAnalysis (or several, labelled), never compute.
// Console: compact tables for people at a terminal. CSV: ops.csv, one row per run × op
// category × phase, for tools. Reports (HTML, SVG, the report directory): report.h.
#pragma once

#include <string>
#include <vector>

#include "profiling/model/analysis.h"
#include "profiling/measure/machine_check.h"
#include "profiling/model/statistics.h"

namespace decodelab {

// One headline figure of a run as the caller measured it (lab/report/run_report.h): printed in
// the report under its label, with its interval, stored under its docs/metrics.md key.
struct HeadlineFigure {
  std::string key;    // "decode_tokens_per_s"
  std::string label;  // "decode tok/s"
  std::string value;  // the median as the CLI table prints it: "27.3"
  Estimate estimate;
};

// A run in a printout: a label the caller chooses ("fixed", "buggy", "run"), its analysis,
// and optionally what the caller measured over all repeats and the machine it ran on.
struct LabelledRun {
  std::string label;
  const RunAnalysis* analysis = nullptr;
  std::vector<HeadlineFigure> headline;  // empty: the report shows the trace's figures only
  const MachineState* machine = nullptr;
};

// A device's roofs side by side (datasheet, measured), ridge points, and their sources;
// then its fixed costs and cache (published and measured) where it has them.
std::string format_device_roofs(const DeviceSpec& spec);
// "0.90 µs per op on the device, 3.80 µs per launch on the host, 6.70 µs per device-to-host
// read round trip" (and the host link when given); "32.0 MiB at 180 GB/s".
std::string format_fixed_costs(const FixedCosts& costs);
std::string format_cache(const CacheLevel& cache);

// Header, summary, phase table, category × phase table, top ops (at most max_rows each).
std::string format_console(const RunAnalysis& analysis, size_t max_rows = 10);

// run,phase,category,precision,count,seconds,share_of_device_time,flops,bytes,intensity,
// achieved_flops_per_s,achieved_bytes_per_s,compute_fraction,memory_fraction,roof_fraction,limiter,near_limiter
std::string ops_csv(const std::vector<LabelledRun>& runs);

// result.json of a report: {"schema": "decodelab-report", "schema_version", "runs": [{label,
// result, metrics and intervals (the headline figures, when given), machine (when given)}]}.
nlohmann::json report_json(const std::vector<LabelledRun>& runs);

}  // namespace decodelab
