// The lab's results: one row per bug — the fixed and buggy decode tok/s, both slowdowns
// with their intervals, the one the lesson is about with its expected range and verdict,
// the sentence saying why, and beside them the same slowdown predicted for the device with
// its error, verdict and sentence (lab/predict/row_prediction.h) — as a console table, JSON, and a
// report page linking each bug's own report. Every figure is the one compare computed
// (lab/run/compare.h).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/run/compare.h"

namespace decodelab {

struct LabRow {
  std::string bug;        // the scenario's name
  std::string bugs;       // what is switched on: "host_sync(per=layer)"
  nlohmann::json fixed;   // {"metrics", "intervals"} of the fixed run (run_metrics_json), "repeats" in pair order
  nlohmann::json buggy;   // ... of the buggy run
  Estimate fixed_tokens_per_s;
  Estimate buggy_tokens_per_s;
  Estimate decode_slowdown;      // samples 0 when the workload has no decode step
  Estimate end_to_end_slowdown;
  SlowdownReading headline;      // the slowdown the lesson is about, its range and verdict
  int pairs = 0;
  std::string stopped_because;  // why the pairs ended; "interrupted": a stop kept the pairs finished before it
  double timed_seconds = 0;   // the pairs' wall time
  double budget_seconds = 0;  // what they could take (the bug's share of the lab's budget)
  bool same_tokens = false;
  std::string backend, device;
  nlohmann::json machine;   // the machine check before the comparison
  nlohmann::json machine_during;  // the watch over its repeats (MachineWatch), null in older rows
  bool contended = false;   // the check or the watch saw contention: every figure is marked so
  nlohmann::json scenario;  // the buggy scenario as run (scenario_to_json): what a resumed lab matches
  std::optional<RowPrediction> prediction;  // beside the measurement (lab/predict/row_prediction.h); none in older rows
};

LabRow lab_row(const Comparison& comparison);
std::vector<LabRow> lab_rows(const std::vector<Comparison>& comparisons);
// The table, then one line per row with its verdict's reason.
std::string lab_table(const std::vector<LabRow>& rows);
// One row as the lab's JSON holds it (bug, bugs, fixed, buggy, fixed_tokens_per_s,
// buggy_tokens_per_s, decode_slowdown, end_to_end_slowdown, intervals, headline, pairs,
// stopped_because, timed_seconds, budget_seconds, same_tokens, backend, device, machine, machine_during, contended,
// scenario, and the prediction's fields), and back
// (InputError naming `file` when a field is missing or mistyped).
nlohmann::json lab_row_json(const LabRow& row);
LabRow lab_row_from_json(const nlohmann::json& json, const std::string& file);
nlohmann::json lab_json(const std::vector<LabRow>& rows);
// DIR/<bug>/: one comparison's pages (lab/report/compare_page.h), linking back to the index;
// written as soon as the comparison is done.
void write_bug_report(const std::filesystem::path& directory, const LabRow& row, const Comparison& comparison);
// DIR/index.html: the table (in the pages' frame and stylesheet), linking each bug's report
// and attribution page where they exist, and each verdict's sentence under it.
void write_lab_index(const std::filesystem::path& directory, const std::vector<LabRow>& rows);
// Both: every comparison's report, then the index.
void write_lab_report(const std::filesystem::path& directory, const std::vector<LabRow>& rows,
                      const std::vector<Comparison>& comparisons);

}  // namespace decodelab
