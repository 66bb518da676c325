// Rows, table, JSON and report page of the five-bug lab.
#include "lab/lab_table.h"

#include <cstdio>
#include <sstream>
#include <system_error>

#include "engine/errors.h"
#include "profiling/atomic_file.h"
#include "lab/run_report.h"
#include "profiling/report.h"

namespace decodelab {

namespace {

std::string expected_text(const LabRow& row) {
  return row.headline.expected ? format_range(*row.headline.expected) : "-";
}

std::string tokens_text(const Estimate& estimate) { return format_figure(estimate, 1); }

}  // namespace

LabRow lab_row(const Comparison& comparison) {
  const Scenario& scenario = comparison.buggy.scenario;
  LabRow row;
  row.bug = scenario.name;
  row.bugs = scenario.bugs.describe();
  row.fixed = run_metrics_json(comparison.fixed.result);
  row.buggy = run_metrics_json(comparison.buggy.result);
  row.fixed_tokens_per_s = comparison.fixed.result.metrics.decode_tokens_per_s;
  row.buggy_tokens_per_s = comparison.buggy.result.metrics.decode_tokens_per_s;
  row.decode_slowdown = comparison.decode_slowdown;
  row.end_to_end_slowdown = comparison.end_to_end_slowdown;
  row.headline = comparison.headline;
  row.pairs = comparison.pairs;
  row.same_tokens = comparison.same_tokens;
  row.backend = comparison.buggy.result.backend;
  row.device = comparison.buggy.result.device;
  row.machine = to_json(comparison.machine);
  row.scenario = scenario_to_json(scenario);
  return row;
}

std::vector<LabRow> lab_rows(const std::vector<Comparison>& comparisons) {
  std::vector<LabRow> rows;
  for (const Comparison& comparison : comparisons) rows.push_back(lab_row(comparison));
  return rows;
}

std::string lab_table(const std::vector<LabRow>& rows) {
  std::ostringstream out;
  out << "| bug | switched on | fixed decode tok/s | buggy decode tok/s | decode_slowdown | end_to_end_slowdown | "
         "expected | verdict | pairs | same tokens |\n"
      << "| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | --- |\n";
  for (const LabRow& row : rows) {
    out << "| " << row.bug << " | " << row.bugs << " | " << tokens_text(row.fixed_tokens_per_s) << " | "
        << tokens_text(row.buggy_tokens_per_s) << " | " << format_slowdown(row.decode_slowdown) << " | "
        << format_slowdown(row.end_to_end_slowdown) << " | " << expected_text(row) << " | "
        << to_string(row.headline.verdict.kind) << " | " << row.pairs << " | " << (row.same_tokens ? "yes" : "NO") << " |\n";
  }
  out << "\n";
  for (const LabRow& row : rows) out << row.bug << ": " << row.headline.verdict.sentence << "\n";
  out << "\nSlowdowns are ratios of the medians over alternated pairs of repeats, ± the 95% interval from "
         "resampling the pairs; the verdict judges the slowdown the expected range names (docs/metrics.md).\n";
  return out.str();
}

nlohmann::json lab_row_json(const LabRow& row) {
  nlohmann::json entry = {{"bug", row.bug},
                          {"bugs", row.bugs},
                          {"fixed", row.fixed},
                          {"buggy", row.buggy},
                          {"fixed_tokens_per_s", row.fixed_tokens_per_s.median},
                          {"buggy_tokens_per_s", row.buggy_tokens_per_s.median},
                          {"end_to_end_slowdown", row.end_to_end_slowdown.median},
                          {"intervals",
                           {{"fixed_tokens_per_s", to_json(row.fixed_tokens_per_s)},
                            {"buggy_tokens_per_s", to_json(row.buggy_tokens_per_s)},
                            {"end_to_end_slowdown", to_json(row.end_to_end_slowdown)}}},
                          {"headline", to_json(row.headline)},
                          {"verdict", to_string(row.headline.verdict.kind)},
                          {"pairs", row.pairs},
                          {"same_tokens", row.same_tokens},
                          {"backend", row.backend},
                          {"device", row.device},
                          {"machine", row.machine},
                          {"scenario", row.scenario}};
  if (row.decode_slowdown.samples > 0) {
    entry["decode_slowdown"] = row.decode_slowdown.median;
    entry["intervals"]["decode_slowdown"] = to_json(row.decode_slowdown);
  } else {
    entry["decode_slowdown"] = nullptr;
  }
  return entry;
}

LabRow lab_row_from_json(const nlohmann::json& json, const std::string& file) {
  auto field = [&](const char* key, bool (nlohmann::json::*is_type)() const noexcept) -> const nlohmann::json& {
    if (!json.contains(key) || !(json[key].*is_type)())
      throw InputError(file, 0, std::string("rows[].") + key, "missing or of the wrong type in a lab row");
    return json[key];
  };
  LabRow row;
  row.bug = field("bug", &nlohmann::json::is_string).get<std::string>();
  row.bugs = field("bugs", &nlohmann::json::is_string).get<std::string>();
  row.fixed = field("fixed", &nlohmann::json::is_object);
  row.buggy = field("buggy", &nlohmann::json::is_object);
  const nlohmann::json& intervals = field("intervals", &nlohmann::json::is_object);
  field("fixed_tokens_per_s", &nlohmann::json::is_number);
  field("end_to_end_slowdown", &nlohmann::json::is_number);
  row.fixed_tokens_per_s = estimate_from_json(intervals.value("fixed_tokens_per_s", nlohmann::json()));
  row.buggy_tokens_per_s = estimate_from_json(intervals.value("buggy_tokens_per_s", nlohmann::json()));
  row.decode_slowdown = estimate_from_json(intervals.value("decode_slowdown", nlohmann::json()));
  row.end_to_end_slowdown = estimate_from_json(intervals.value("end_to_end_slowdown", nlohmann::json()));
  row.headline = slowdown_reading_from_json(field("headline", &nlohmann::json::is_object));
  row.pairs = field("pairs", &nlohmann::json::is_number).get<int>();
  row.same_tokens = field("same_tokens", &nlohmann::json::is_boolean).get<bool>();
  row.backend = field("backend", &nlohmann::json::is_string).get<std::string>();
  row.device = field("device", &nlohmann::json::is_string).get<std::string>();
  row.machine = json.value("machine", nlohmann::json::object());
  row.scenario = field("scenario", &nlohmann::json::is_object);
  return row;
}

nlohmann::json lab_json(const std::vector<LabRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const LabRow& row : rows) list.push_back(lab_row_json(row));
  return list;
}

void write_bug_report(const std::filesystem::path& directory, const LabRow& row, const Comparison& comparison) {
  const ReportSummary summary = comparison_summary(comparison);
  write_report_directory(directory / row.bug, compared_runs(comparison), "decodelab lab: " + row.bug, &summary);
  save_file_atomically(directory / row.bug / "attribution.html",
                        "<!doctype html><html><head><meta charset=\"utf-8\"><title>why " + row.bug +
                            " is slower</title></head><body style=\"font:14px sans-serif;margin:2em\"><h1>" +
                            xml_escape(row.bug) + "</h1>" + attribution_html(comparison.attribution) +
                            "</body></html>\n");
}

void write_lab_index(const std::filesystem::path& directory, const std::vector<LabRow>& rows) {
  std::filesystem::create_directories(directory);
  std::ostringstream html;
  html << "<!doctype html><html><head><meta charset=\"utf-8\"><title>decodelab lab</title><style>"
          "body{font:14px/1.4 sans-serif;margin:2em;color:#141413}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
          "td.why{text-align:left;font-size:12px;max-width:28em}"
          ".in{color:#2b6a24}.out{color:#b3154f}</style></head><body><h1>decodelab: the five-bug lab</h1>";
  if (!rows.empty())
    html << "<p>Device: " << xml_escape(rows.front().device) << " (" << xml_escape(rows.front().backend) << ")</p>";
  html << "<table><tr><th>bug</th><th>switched on</th><th>fixed decode tok/s</th><th>buggy decode tok/s</th>"
          "<th>decode_slowdown</th><th>end_to_end_slowdown</th><th>expected</th><th>verdict</th><th>why</th>"
          "<th>pairs</th><th>same tokens</th></tr>";
  for (const LabRow& row : rows) {
    std::error_code error;
    const bool has_report = std::filesystem::is_regular_file(directory / row.bug / "report.html", error);
    html << "<tr><td>";
    if (has_report) {
      html << "<a href=\"" << xml_escape(row.bug) << "/report.html\">" << xml_escape(row.bug) << "</a>";
    } else {
      html << xml_escape(row.bug);
    }
    const VerdictKind kind = row.headline.verdict.kind;
    html << "</td><td>" << xml_escape(row.bugs) << "</td><td>" << xml_escape(tokens_text(row.fixed_tokens_per_s))
         << "</td><td>" << xml_escape(tokens_text(row.buggy_tokens_per_s)) << "</td><td>"
         << xml_escape(format_slowdown(row.decode_slowdown)) << "</td><td>"
         << xml_escape(format_slowdown(row.end_to_end_slowdown)) << "</td><td>" << xml_escape(expected_text(row))
         << "</td><td class=\"" << (kind == VerdictKind::InRange ? "in" : "out") << "\">" << to_string(kind)
         << "</td><td class=\"why\">" << xml_escape(row.headline.verdict.sentence) << "</td><td>" << row.pairs
         << "</td><td>" << (row.same_tokens ? "yes" : "NO") << "</td></tr>";
  }
  html << "</table><p>decode_slowdown: the fixed run's decode tok/s over the buggy run's; end_to_end_slowdown: the "
          "buggy run's whole generation time over the fixed run's. Each is the ratio of the medians over alternated "
          "pairs of repeats on one backend, ± the 95% interval from resampling the pairs; the verdict judges the one the "
          "expected range names (docs/metrics.md).</p>";
  html << "<ul>";
  for (const LabRow& row : rows) {
    std::error_code error;
    if (std::filesystem::is_regular_file(directory / row.bug / "attribution.html", error))
      html << "<li><a href=\"" << xml_escape(row.bug) << "/attribution.html\">why " << xml_escape(row.bug)
           << " is slower</a>: the extra time split into extra work, extra bytes, idle device, lost efficiency</li>";
  }
  html << "</ul></body></html>\n";
  save_file_atomically(directory / "index.html", html.str());
}

void write_lab_report(const std::filesystem::path& directory, const std::vector<LabRow>& rows,
                      const std::vector<Comparison>& comparisons) {
  std::filesystem::create_directories(directory);
  for (size_t i = 0; i < comparisons.size(); ++i) write_bug_report(directory, rows[i], comparisons[i]);
  write_lab_index(directory, rows);
}

}  // namespace decodelab
