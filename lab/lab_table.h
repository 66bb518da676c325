// The lab's results: one row per bug (fixed and buggy tokens/s, the slowdown, the range
// the lesson documents, whether it fell in it), as a console table, JSON, and a report
// page linking each bug's own report.
#pragma once

#include <filesystem>
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
  double expected_min = 0, expected_max = 0;  // 0 = not stated
  std::string verdict;    // "in range", "below", "above", "-"
  bool same_tokens = false;
};

std::vector<LabRow> lab_rows(const std::vector<Comparison>& comparisons);
std::string lab_table(const std::vector<LabRow>& rows);
nlohmann::json lab_json(const std::vector<LabRow>& rows, const std::vector<Comparison>& comparisons);
// DIR/index.html (the table, self-contained) and DIR/<bug>/ (each comparison's report).
void write_lab_report(const std::filesystem::path& directory, const std::vector<LabRow>& rows,
                      const std::vector<Comparison>& comparisons);

}  // namespace decodelab
