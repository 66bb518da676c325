// Rows, table, JSON and report page of the five-bug lab.
#include "lab/lab_table.h"

#include <cstdio>
#include <sstream>
#include <system_error>

#include "engine/errors.h"
#include "profiling/atomic_file.h"
#include "lab/compare_page.h"
#include "lab/run_report.h"
#include "profiling/html_page.h"
#include "profiling/report.h"

namespace decodelab {

namespace {

// The lab's rows show decode tok/s: the drift note of decode_slowdown.
std::string row_drift_note(const LabRow& row) {
  const double rows_ratio =
      row.buggy_tokens_per_s.median > 0 ? row.fixed_tokens_per_s.median / row.buggy_tokens_per_s.median : 0;
  return drift_note("decode_slowdown", row.decode_slowdown, rows_ratio);
}

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
  // The repeats, in pair order: what each slowdown is the median of the pairs' ratios over.
  row.fixed["repeats"] = repeats_json(comparison.fixed.scenario, comparison.fixed.result);
  row.buggy["repeats"] = repeats_json(comparison.buggy.scenario, comparison.buggy.result);
  row.fixed_tokens_per_s = comparison.fixed.result.metrics.decode_tokens_per_s;
  row.buggy_tokens_per_s = comparison.buggy.result.metrics.decode_tokens_per_s;
  row.decode_slowdown = comparison.decode_slowdown;
  row.end_to_end_slowdown = comparison.end_to_end_slowdown;
  row.headline = comparison.headline;
  row.pairs = comparison.pairs;
  row.timed_seconds = comparison.timed_seconds;
  row.budget_seconds = comparison.budget_seconds;
  row.same_tokens = comparison.same_tokens;
  row.backend = comparison.buggy.result.backend;
  row.device = comparison.buggy.result.device;
  row.machine = to_json(comparison.machine);
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
  out << "| bug | switched on | fixed decode tok/s | buggy decode tok/s | decode_slowdown | end_to_end_slowdown | "
         "expected | verdict | pairs | same tokens |"
      << prediction_columns_header(elsewhere) << "\n"
      << "| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | --- |" << prediction_columns_rule(elsewhere) << "\n";
  for (const LabRow& row : rows) {
    out << "| " << row.bug << " | " << row.bugs << " | " << tokens_text(row.fixed_tokens_per_s) << " | "
        << tokens_text(row.buggy_tokens_per_s) << " | " << format_slowdown(row.decode_slowdown) << " | "
        << format_slowdown(row.end_to_end_slowdown) << " | " << expected_text(row) << " | "
        << to_string(row.headline.verdict.kind) << " | " << row.pairs << " | " << (row.same_tokens ? "yes" : "NO") << " |"
        << prediction_cells(row.prediction, elsewhere) << "\n";
  }
  out << "\n";
  for (const LabRow& row : rows) out << row.bug << ": " << row.headline.verdict.sentence << "\n";
  out << prediction_sentences(rows, "- ", "\n");
  for (const LabRow& row : rows) {
    const std::string note = row_drift_note(row);
    if (!note.empty()) out << row.bug << ": note: " << note << "\n";
  }
  out << "\n" << slowdown_definition() << "; the verdict judges the slowdown the expected range names (docs/metrics.md). "
         "predicted: that slowdown from the roofline model with this device's roofs and fixed costs; error: "
         "measured / predicted - 1 (\"in 95% CI\": the prediction lies inside the measured interval); vs prediction: "
         "within ±"
      << kPredictionTolerance * 100
      << "% of it or not, \"(busy)\", \"(roofs noisy)\" or \"(host starved N%)\" where the machine was not quiet (the "
         "error then holds its noise as well as the model's misses).\n";
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
                          {"timed_seconds", row.timed_seconds},
                          {"budget_seconds", row.budget_seconds},
                          {"same_tokens", row.same_tokens},
                          {"backend", row.backend},
                          {"device", row.device},
                          {"machine", row.machine},
                          {"scenario", row.scenario}};
  if (row.prediction) add_row_prediction_json(entry, *row.prediction);
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
  row.timed_seconds = json.value("timed_seconds", 0.0);  // absent in rows written before these fields
  row.budget_seconds = json.value("budget_seconds", 0.0);
  row.same_tokens = field("same_tokens", &nlohmann::json::is_boolean).get<bool>();
  row.backend = field("backend", &nlohmann::json::is_string).get<std::string>();
  row.device = field("device", &nlohmann::json::is_string).get<std::string>();
  row.machine = json.value("machine", nlohmann::json::object());
  row.scenario = field("scenario", &nlohmann::json::is_object);
  row.prediction = row_prediction_from_json(json, file);
  return row;
}

nlohmann::json lab_json(const std::vector<LabRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const LabRow& row : rows) list.push_back(lab_row_json(row));
  return list;
}

void write_bug_report(const std::filesystem::path& directory, const LabRow& row, const Comparison& comparison) {
  write_comparison_report(directory / row.bug, comparison, "decodelab lab: " + row.bug, PagePlace::InLab);
}

void write_lab_index(const std::filesystem::path& directory, const std::vector<LabRow>& rows) {
  std::filesystem::create_directories(directory);
  auto exists = [&](const LabRow& row, const char* page) {
    std::error_code error;
    return std::filesystem::is_regular_file(directory / row.bug / page, error);
  };
  std::ostringstream html;
  html << "<header><h1>decodelab: the five-bug lab</h1>";
  if (!rows.empty())
    html << "<p>" << xml_escape(rows.front().device) << " · " << xml_escape(rows.front().backend) << " backend</p>";
  html << "</header>\n<section><h2>Each bug, fixed vs buggy</h2>";
  std::ostringstream table;
  table << "<table><tr><th>bug</th><th class=\"left\">switched on</th><th>fixed decode tok/s</th><th>buggy decode tok/s</th>"
           "<th>decode_slowdown</th><th>end_to_end_slowdown</th><th>expected</th><th>verdict</th><th>pairs</th>"
           "<th>same tokens</th>";
  const std::vector<std::string> elsewhere = elsewhere_devices(predictions_of(rows));
  table << "<th>predicted</th><th>error</th><th>vs prediction</th>";
  for (const std::string& device : elsewhere) table << "<th>on " << xml_escape(device) << "</th>";
  table << "<th>pages</th></tr>";
  for (const LabRow& row : rows) {
    const bool has_report = exists(row, "report.html");
    const bool has_attribution = exists(row, "attribution.html");
    table << "<tr><td>";
    if (has_report) {
      table << "<a href=\"" << xml_escape(row.bug) << "/report.html\">" << xml_escape(row.bug) << "</a>";
    } else {
      table << xml_escape(row.bug);
    }
    const std::string verdict = to_string(row.headline.verdict.kind);
    table << "</td><td class=\"left\">" << xml_escape(row.bugs) << "</td><td>" << xml_escape(tokens_text(row.fixed_tokens_per_s))
          << "</td><td>" << xml_escape(tokens_text(row.buggy_tokens_per_s)) << "</td><td>"
          << xml_escape(format_slowdown(row.decode_slowdown)) << "</td><td>"
          << xml_escape(format_slowdown(row.end_to_end_slowdown)) << "</td><td>" << xml_escape(expected_text(row))
          << "</td><td><span class=\"verdict " << verdict_class(verdict) << "\">" << xml_escape(verdict)
          << "</span></td><td>" << row.pairs
          << "</td><td>" << (row.same_tokens ? "yes" : "NO") << "</td>" << prediction_html_cells(row.prediction, elsewhere)
          << "<td>";
    if (has_report) table << "<a href=\"" << xml_escape(row.bug) << "/report.html\">report</a>";
    if (has_attribution)
      table << (has_report ? " · " : "") << "<a href=\"" << xml_escape(row.bug) << "/attribution.html\">why slower</a>";
    table << "</td></tr>";
  }
  table << "</table>";
  html << scrolling_table(table.str());
  html << "<h3>Why each verdict</h3><ul>";  // the sentences under the table, as the CLI prints them
  for (const LabRow& row : rows) {
    html << "<li><b>" << xml_escape(row.bug) << ":</b> " << xml_escape(row.headline.verdict.sentence) << "</li>";
  }
  html << "</ul>";
  for (const LabRow& row : rows) {
    const std::string note = row_drift_note(row);
    if (!note.empty()) html << "<p class=\"note\">Note, " << xml_escape(row.bug) << ": " << xml_escape(note) << ".</p>";
  }
  html << "<p class=\"note\">" << xml_escape(slowdown_definition()) << "; the verdict judges the one the "
          "expected range names (docs/metrics.md). Predicted: that same slowdown from the roofline model with this "
          "device's roofs and fixed costs; error: measured / predicted - 1. Each bug's report tells its lesson, its "
          "slowdown and why; \"why slower\" splits the extra time into extra work, extra bytes, idle device and lost "
          "efficiency.</p>";
  const std::string sentences = prediction_sentences(rows, "<li>", "</li>", true);
  if (!sentences.empty()) html << "<h3>What the model priced</h3><ul>" << sentences << "</ul>";
  html << "</section>\n";
  save_file_atomically(directory / "index.html", html_page("decodelab lab", html.str()));
}

void write_lab_report(const std::filesystem::path& directory, const std::vector<LabRow>& rows,
                      const std::vector<Comparison>& comparisons) {
  std::filesystem::create_directories(directory);
  for (size_t i = 0; i < comparisons.size(); ++i) write_bug_report(directory, rows[i], comparisons[i]);
  write_lab_index(directory, rows);
}

}  // namespace decodelab
