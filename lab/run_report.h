// Printers for one run: a markdown table row (llama-bench style) and the result JSON.
// They only format a RunResult; nothing here measures or decides.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "lab/runner.h"
#include "lab/scenario.h"

namespace decodelab {

// Bumped when a key of the result JSON changes meaning or disappears (additions are free).
constexpr int kResultSchemaVersion = 1;

// The header and separator lines, then one row per run.
std::string run_table_header();
std::string run_table_row(const Scenario& scenario, const RunResult& result);

// The result file: schema_version, scenario (as run), backend, device, model, workload,
// run, bugs, memory, metrics (medians), metrics_spread, repeats (per repeat), outputs.
nlohmann::json run_result_json(const Scenario& scenario, const RunResult& result);

// What the table row needs, read back from a result JSON (a row a resumed sweep reuses):
// backend, device, and each metric's median and spread.
RunResult run_summary_from_json(const nlohmann::json& result);

}  // namespace decodelab
