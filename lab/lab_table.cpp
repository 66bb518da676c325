// Rows, table, JSON and report page of the five-bug lab.
#include "lab/lab_table.h"

#include <cstdio>
#include <sstream>
#include <system_error>

#include "engine/errors.h"
#include "profiling/atomic_file.h"
#include "profiling/report.h"

namespace decodelab {

namespace {

std::vector<const RowPrediction*> predictions_of(const std::vector<LabRow>& rows) {
  std::vector<const RowPrediction*> predictions;
  for (const LabRow& row : rows) predictions.push_back(row.prediction ? &*row.prediction : nullptr);
  return predictions;
}

// Each row's prediction sentence (or why it has none), one per line.
std::string prediction_sentences(const std::vector<LabRow>& rows, const char* before, const char* after,
                                 bool html = false) {
  std::string text;
  for (const LabRow& row : rows) {
    if (!row.prediction) continue;
    const std::string sentence = row.prediction->unavailable.empty()
                                     ? row.prediction->sentence
                                     : row.bug + ": no prediction (" + row.prediction->unavailable + ")";
    text += before + (html ? xml_escape(sentence) : sentence) + after;
  }
  return text;
}

std::string range_text(const LabRow& row) {
  if (row.expected_max <= 0) return "-";
  char text[64];
  std::snprintf(text, sizeof text, "%g-%gx", row.expected_min, row.expected_max);
  return text;
}

}  // namespace

LabRow lab_row(const Comparison& comparison) {
  const Scenario& scenario = comparison.buggy.scenario;
  LabRow row;
  row.bug = scenario.name;
  row.bugs = scenario.bugs.describe();
  row.fixed_tokens_per_s = comparison.fixed.result.metrics.decode_tokens_per_s.median;
  row.buggy_tokens_per_s = comparison.buggy.result.metrics.decode_tokens_per_s.median;
  row.slowdown = comparison.slowdown;
  row.decode_slowdown = comparison.decode_slowdown;
  row.expected_min = scenario.expected_slowdown_min;
  row.expected_max = scenario.expected_slowdown_max;
  row.verdict = row.expected_max <= 0                 ? "-"
                : row.slowdown < row.expected_min ? "below"
                : row.slowdown > row.expected_max ? "above"
                                                  : "in range";
  row.same_tokens = comparison.same_tokens;
  row.backend = comparison.buggy.result.backend;
  row.device = comparison.buggy.result.device;
  row.scenario = scenario_to_json(scenario);
  row.prediction = comparison.prediction;
  return row;
}

std::vector<LabRow> lab_rows(const std::vector<Comparison>& comparisons) {
  std::vector<LabRow> rows;
  for (const Comparison& comparison : comparisons) rows.push_back(lab_row(comparison));
  return rows;
}

std::string lab_table(const std::vector<LabRow>& rows) {
  const std::vector<std::string> elsewhere = elsewhere_devices(predictions_of(rows));
  std::ostringstream out;
  out << "| bug | switched on | fixed tok/s | buggy tok/s | slowdown | expected | verdict | same tokens |"
      << prediction_columns_header(elsewhere) << "\n"
      << "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |" << prediction_columns_rule(elsewhere) << "\n";
  char line[512];
  for (const LabRow& row : rows) {
    std::snprintf(line, sizeof line, "| %s | %s | %.1f | %.1f | %.2fx | %s | %s | %s |", row.bug.c_str(),
                  row.bugs.c_str(), row.fixed_tokens_per_s, row.buggy_tokens_per_s, row.slowdown,
                  range_text(row).c_str(), row.verdict.c_str(), row.same_tokens ? "yes" : "NO");
    out << line << prediction_cells(row.prediction, elsewhere) << "\n";
  }
  out << prediction_sentences(rows, "- ", "\n");
  return out.str();
}

nlohmann::json lab_row_json(const LabRow& row) {
  nlohmann::json entry = {{"bug", row.bug},
                          {"bugs", row.bugs},
                          {"fixed_tokens_per_s", row.fixed_tokens_per_s},
                          {"buggy_tokens_per_s", row.buggy_tokens_per_s},
                          {"slowdown", row.slowdown},
                          {"decode_slowdown", row.decode_slowdown},
                          {"verdict", row.verdict},
                          {"same_tokens", row.same_tokens},
                          {"backend", row.backend},
                          {"device", row.device},
                          {"scenario", row.scenario}};
  if (row.prediction) add_row_prediction_json(entry, *row.prediction);
  if (row.expected_max > 0) entry["expected_slowdown"] = {{"min", row.expected_min}, {"max", row.expected_max}};
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
  row.fixed_tokens_per_s = field("fixed_tokens_per_s", &nlohmann::json::is_number).get<double>();
  row.buggy_tokens_per_s = field("buggy_tokens_per_s", &nlohmann::json::is_number).get<double>();
  row.slowdown = field("slowdown", &nlohmann::json::is_number).get<double>();
  row.decode_slowdown = field("decode_slowdown", &nlohmann::json::is_number).get<double>();
  row.verdict = field("verdict", &nlohmann::json::is_string).get<std::string>();
  row.same_tokens = field("same_tokens", &nlohmann::json::is_boolean).get<bool>();
  row.backend = field("backend", &nlohmann::json::is_string).get<std::string>();
  row.device = field("device", &nlohmann::json::is_string).get<std::string>();
  row.scenario = field("scenario", &nlohmann::json::is_object);
  if (json.contains("expected_slowdown")) {
    const nlohmann::json& expected = field("expected_slowdown", &nlohmann::json::is_object);
    row.expected_min = expected.value("min", 0.0);
    row.expected_max = expected.value("max", 0.0);
  }
  row.prediction = row_prediction_from_json(json, file);
  return row;
}

nlohmann::json lab_json(const std::vector<LabRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const LabRow& row : rows) list.push_back(lab_row_json(row));
  return list;
}

void write_bug_report(const std::filesystem::path& directory, const LabRow& row, const Comparison& comparison) {
  write_report_directory(directory / row.bug,
                         {{"fixed", &comparison.fixed.analysis}, {"buggy", &comparison.buggy.analysis}},
                         "decodelab lab: " + row.bug);
  save_file_atomically(directory / row.bug / "attribution.html",
                        "<!doctype html><html><head><meta charset=\"utf-8\"><title>why " + row.bug +
                            " is slower</title></head><body style=\"font:14px sans-serif;margin:2em\"><h1>" +
                            xml_escape(row.bug) + "</h1>" + attribution_html(comparison.attribution) +
                            prediction_html(comparison.prediction) +
                            "</body></html>\n");
}

void write_lab_index(const std::filesystem::path& directory, const std::vector<LabRow>& rows) {
  std::filesystem::create_directories(directory);
  std::ostringstream html;
  html << "<!doctype html><html><head><meta charset=\"utf-8\"><title>decodelab lab</title><style>"
          "body{font:14px/1.4 sans-serif;margin:2em;color:#141413}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
          ".in{color:#2b6a24}.out{color:#b3154f}</style></head><body><h1>decodelab: the five-bug lab</h1>";
  if (!rows.empty())
    html << "<p>Device: " << xml_escape(rows.front().device) << " (" << xml_escape(rows.front().backend) << ")</p>";
  html << "<table><tr><th>bug</th><th>switched on</th><th>fixed tok/s</th><th>buggy tok/s</th><th>slowdown</th>"
          "<th>expected</th><th>verdict</th><th>same tokens</th>";
  const std::vector<std::string> elsewhere = elsewhere_devices(predictions_of(rows));
  html << "<th>predicted</th><th>error</th><th>vs prediction</th>";
  for (const std::string& device : elsewhere) html << "<th>on " << xml_escape(device) << "</th>";
  html << "</tr>";
  for (const LabRow& row : rows) {
    char numbers[256];
    std::snprintf(numbers, sizeof numbers, "<td>%.1f</td><td>%.1f</td><td>%.2fx</td>", row.fixed_tokens_per_s,
                  row.buggy_tokens_per_s, row.slowdown);
    std::error_code error;
    const bool has_report = std::filesystem::is_regular_file(directory / row.bug / "report.html", error);
    html << "<tr><td>";
    if (has_report) {
      html << "<a href=\"" << xml_escape(row.bug) << "/report.html\">" << xml_escape(row.bug) << "</a>";
    } else {
      html << xml_escape(row.bug);
    }
    html << "</td><td>" << xml_escape(row.bugs) << "</td>" << numbers << "<td>" << range_text(row)
         << "</td><td class=\"" << (row.verdict == "in range" ? "in" : "out") << "\">" << row.verdict << "</td><td>"
         << (row.same_tokens ? "yes" : "NO") << "</td>" << prediction_html_cells(row.prediction, elsewhere) << "</tr>";
  }
  html << "</table><p>Slowdown: the buggy run's total generation time divided by its fixed twin's (median of the "
          "repeats, alternated on one backend). Predicted: the same slowdown from the roofline model and this "
          "device's roofs and fixed costs; error: measured / predicted - 1.</p><ul>"
       << prediction_sentences(rows, "<li>", "</li>", true) << "</ul>";
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
