// Printers for one run: a markdown table row (llama-bench style), the result JSON, and
// the headline figures a report shows. They only format a RunResult, iterating over
// run_figures() (lab/run/run_metrics.h) so that every surface shows the same figures under
// the same names; nothing here measures or decides.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lab/run/runner.h"
#include "lab/scenario/scenario.h"
#include "profiling/model/analysis.h"
#include "profiling/report/printers.h"

namespace decodelab {

// Bumped when a key of the result JSON changes meaning or disappears (additions are free).
// 2: metrics renamed after docs/metrics.md, intervals beside them, the machine check.
constexpr int kResultSchemaVersion = 2;

// One figure as every table prints it: the median with `decimals`, its interval, and
// "noisy" where the interval missed the target ("27.3 ±1.8%", "6.0 ±64% noisy").
std::string format_figure(const Estimate& estimate, int decimals);
// The header and separator lines, then one row per run; the legend says what ± and
// "noisy" mean under the rows.
std::string run_table_header();
std::string run_table_row(const Scenario& scenario, const RunResult& result);
std::string run_table_legend(double target_ci);

// The result file: schema_version, scenario (as run), backend, device, model, workload,
// run (the repeat policy, how many repeats ran and why they stopped), bugs, memory,
// metrics (medians under their docs/metrics.md names, and the per-step constants),
// intervals (each median's 95% interval, samples, noisy), machine (the check before
// timing, when taken), repeats (per repeat), outputs.
nlohmann::json run_result_json(const Scenario& scenario, const RunResult& result);
// Just {"metrics", "intervals"} of a result: the part of run_result_json other rows embed.
nlohmann::json run_metrics_json(const RunResult& result);
// The per-repeat figures of run_result_json's "repeats", in the order the repeats ran (in a
// comparison, repeat i of each side is pair i).
nlohmann::json repeats_json(const Scenario& scenario, const RunResult& result);

// What the table row needs, read back from a result JSON (a row a resumed sweep reuses):
// backend, device, each figure's median and interval.
RunResult run_summary_from_json(const nlohmann::json& result);

// The run's figures as a report's headline shows them: label, the median as the table
// prints it, its interval, and the JSON key it is stored under.
std::vector<HeadlineFigure> headline_figures(const RunResult& result);

}  // namespace decodelab
