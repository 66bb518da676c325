// Rows, table, JSON and report page of the five-bug lab.
#include "lab/lab_table.h"

#include <cstdio>
#include <sstream>

#include "lab/output_files.h"
#include "profiling/report.h"

namespace decodelab {

namespace {

std::string range_text(const LabRow& row) {
  if (row.expected_max <= 0) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%g-%gx", row.expected_min, row.expected_max);
  return text;
}

}  // namespace

std::vector<LabRow> lab_rows(const std::vector<Comparison>& comparisons) {
  std::vector<LabRow> rows;
  for (const Comparison& comparison : comparisons) {
    const Scenario& scenario = comparison.buggy.scenario;
    LabRow row;
    row.bug = scenario.name;
    row.bugs = scenario.bugs.describe();
    row.fixed_tokens_per_s = comparison.fixed.result.metrics.decode_tokens_per_s.median;
    row.buggy_tokens_per_s = comparison.buggy.result.metrics.decode_tokens_per_s.median;
    row.slowdown = comparison.slowdown;
    row.expected_min = scenario.expected_slowdown_min;
    row.expected_max = scenario.expected_slowdown_max;
    row.verdict = row.expected_max <= 0                 ? "-"
                  : row.slowdown < row.expected_min ? "below"
                  : row.slowdown > row.expected_max ? "above"
                                                    : "in range";
    row.same_tokens = comparison.same_tokens;
    rows.push_back(row);
  }
  return rows;
}

std::string lab_table(const std::vector<LabRow>& rows) {
  std::ostringstream out;
  out << "| bug | switched on | fixed tok/s | buggy tok/s | slowdown | expected | verdict | same tokens |\n"
      << "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |\n";
  char line[512];
  for (const LabRow& row : rows) {
    std::snprintf(line, sizeof line, "| %s | %s | %.1f | %.1f | %.2fx | %s | %s | %s |\n", row.bug.c_str(),
                  row.bugs.c_str(), row.fixed_tokens_per_s, row.buggy_tokens_per_s, row.slowdown,
                  range_text(row).c_str(), row.verdict.c_str(), row.same_tokens ? "yes" : "NO");
    out << line;
  }
  return out.str();
}

nlohmann::json lab_json(const std::vector<LabRow>& rows, const std::vector<Comparison>& comparisons) {
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const LabRow& row = rows[i];
    nlohmann::json entry = {{"bug", row.bug},
                            {"bugs", row.bugs},
                            {"fixed_tokens_per_s", row.fixed_tokens_per_s},
                            {"buggy_tokens_per_s", row.buggy_tokens_per_s},
                            {"slowdown", row.slowdown},
                            {"decode_slowdown", comparisons[i].decode_slowdown},
                            {"verdict", row.verdict},
                            {"same_tokens", row.same_tokens},
                            {"backend", comparisons[i].buggy.result.backend},
                            {"device", comparisons[i].buggy.result.device}};
    if (row.expected_max > 0) entry["expected_slowdown"] = {{"min", row.expected_min}, {"max", row.expected_max}};
    list.push_back(entry);
  }
  return list;
}

void write_lab_report(const std::filesystem::path& directory, const std::vector<LabRow>& rows,
                      const std::vector<Comparison>& comparisons) {
  std::filesystem::create_directories(directory);
  for (size_t i = 0; i < comparisons.size(); ++i) {
    write_report_directory(directory / rows[i].bug,
                           {{"fixed", &comparisons[i].fixed.analysis}, {"buggy", &comparisons[i].buggy.analysis}},
                           "decodelab lab: " + rows[i].bug);
  }
  std::ostringstream html;
  html << "<!doctype html><html><head><meta charset=\"utf-8\"><title>decodelab lab</title><style>"
          "body{font:14px/1.4 sans-serif;margin:2em;color:#141413}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
          ".in{color:#2b6a24}.out{color:#b3154f}</style></head><body><h1>decodelab: the five-bug lab</h1>";
  if (!comparisons.empty())
    html << "<p>Device: " << xml_escape(comparisons.front().buggy.result.device) << " ("
         << xml_escape(comparisons.front().buggy.result.backend) << ")</p>";
  html << "<table><tr><th>bug</th><th>switched on</th><th>fixed tok/s</th><th>buggy tok/s</th><th>slowdown</th>"
          "<th>expected</th><th>verdict</th><th>same tokens</th></tr>";
  for (const LabRow& row : rows) {
    char numbers[256];
    std::snprintf(numbers, sizeof numbers, "<td>%.1f</td><td>%.1f</td><td>%.2fx</td>", row.fixed_tokens_per_s,
                  row.buggy_tokens_per_s, row.slowdown);
    html << "<tr><td><a href=\"" << xml_escape(row.bug) << "/report.html\">" << xml_escape(row.bug) << "</a></td><td>"
         << xml_escape(row.bugs) << "</td>" << numbers << "<td>" << range_text(row) << "</td><td class=\""
         << (row.verdict == "in range" ? "in" : "out") << "\">" << row.verdict << "</td><td>"
         << (row.same_tokens ? "yes" : "NO") << "</td></tr>";
  }
  html << "</table><p>Slowdown: the buggy run's total generation time divided by its fixed twin's (median of the "
          "repeats, alternated on one backend).</p></body></html>\n";
  write_file_atomically(directory / "index.html", html.str());
}

}  // namespace decodelab
