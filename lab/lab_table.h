// The lab's results: one row per bug (fixed and buggy tokens/s, the slowdown, the range
// the lesson documents, whether it fell in it, and beside them the slowdown predicted for
// the device with its error, verdict and sentence — lab/row_prediction.h), as a console
// table, JSON, and a report page linking each bug's own report.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/compare.h"

namespace decodelab {

struct LabRow {
  std::string bug;        // the scenario's name
  std::string bugs;       // what is switched on: "host_sync(per=layer)"
  double fixed_tokens_per_s = 0;
  double buggy_tokens_per_s = 0;
  double slowdown = 0;    // buggy total generation time / fixed
  double decode_slowdown = 0;  // fixed decode tok/s / buggy
  double expected_min = 0, expected_max = 0;  // 0 = not stated
  std::string verdict;    // "in range", "below", "above", "-"
  bool same_tokens = false;
  std::string backend, device;
  nlohmann::json scenario;  // the buggy scenario as run (scenario_to_json): what a resumed lab matches
  std::optional<RowPrediction> prediction;  // beside the measurement (lab/row_prediction.h); none in older rows
};

LabRow lab_row(const Comparison& comparison);
std::vector<LabRow> lab_rows(const std::vector<Comparison>& comparisons);
std::string lab_table(const std::vector<LabRow>& rows);
// One row as the lab's JSON holds it (bug, bugs, fixed_tokens_per_s, buggy_tokens_per_s,
// slowdown, decode_slowdown, verdict, same_tokens, backend, device, expected_slowdown,
// scenario, and the prediction's fields), and back (InputError naming `file` when a field is missing or mistyped).
nlohmann::json lab_row_json(const LabRow& row);
LabRow lab_row_from_json(const nlohmann::json& json, const std::string& file);
nlohmann::json lab_json(const std::vector<LabRow>& rows);
// DIR/<bug>/: one comparison's report (written as soon as the comparison is done).
void write_bug_report(const std::filesystem::path& directory, const LabRow& row, const Comparison& comparison);
// DIR/index.html: the table, self-contained, linking each bug's report where one exists.
void write_lab_index(const std::filesystem::path& directory, const std::vector<LabRow>& rows);
// Both: every comparison's report, then the index.
void write_lab_report(const std::filesystem::path& directory, const std::vector<LabRow>& rows,
                      const std::vector<Comparison>& comparisons);

}  // namespace decodelab
