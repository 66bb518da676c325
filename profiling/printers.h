// Printers: they only format a RunAnalysis (or several, labelled), never compute.
// Console: compact tables for people at a terminal. CSV: ops.csv, one row per run × op
// category × phase, for tools. Reports (HTML, SVG, the report directory): report.h.
#pragma once

#include <string>
#include <vector>

#include "profiling/analysis.h"

namespace decodelab {

// A run in a printout: a label the caller chooses ("fixed", "buggy", "run") and its analysis.
struct LabelledRun {
  std::string label;
  const RunAnalysis* analysis = nullptr;
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
// achieved_flops_per_s,achieved_bytes_per_s,compute_fraction,memory_fraction,roof_fraction,limiter
std::string ops_csv(const std::vector<LabelledRun>& runs);

// result.json of a report: {"schema": "decodelab-report", "schema_version", "runs": [{label, result}]}.
nlohmann::json report_json(const std::vector<LabelledRun>& runs);

}  // namespace decodelab
