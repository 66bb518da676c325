// Rows, table, JSON and report page of the five-bug lab.
#include "lab/report/lab_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "engine/base/errors.h"
#include "profiling/atomic_file.h"
#include "lab/report/compare_page.h"
#include "lab/report/run_report.h"
#include "profiling/report/html_page.h"
#include "profiling/report/report.h"

namespace decodelab {

namespace {

// The lab's rows show decode tok/s: the drift note of decode_slowdown.
std::string row_drift_note(const LabRow& row) {
  const double rows_ratio =
      row.buggy_tokens_per_s.median > 0 ? row.fixed_tokens_per_s.median / row.buggy_tokens_per_s.median : 0;
  return drift_note(SlowdownMetric::Decode, row.decode_slowdown, rows_ratio);
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

std::string svg_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

// "1", "20", "0.5": a tick as written by hand.
std::string tick_text(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

// The page's one chart: per bug, the measured slowdown the verdict judges with its 95%
// interval, the course's range as a band, and this device's and the lesson's GPU's
// predictions of the same slowdown as markers, on one log scale.
std::string slowdown_chart(const std::vector<LabRow>& rows, const std::string& gpu) {
  constexpr double kLeft = 170, kRight = 700, kTop = 34, kRow = 30, kWidth = 760;
  double low = 1, high = 2;
  auto widen = [&](double value) {
    if (value > 0 && std::isfinite(value)) low = std::min(low, value), high = std::max(high, value);
  };
  auto gpu_prediction = [&](const LabRow& row) -> double {
    if (!row.prediction) return 0;
    for (const DeviceSlowdown& device : row.prediction->elsewhere) {
      if (device.device != gpu) continue;
      return row.headline.metric == SlowdownMetric::Decode ? device.decode_slowdown : device.end_to_end_slowdown;
    }
    return 0;
  };
  for (const LabRow& row : rows) {
    widen(row.headline.measured.low), widen(row.headline.measured.high);
    if (row.headline.expected) widen(row.headline.expected->min), widen(row.headline.expected->max);
    if (row.prediction && row.prediction->unavailable.empty()) widen(row.prediction->predicted());
    widen(gpu_prediction(row));
  }
  low = std::pow(10.0, std::floor(std::log10(low))), high = std::pow(10.0, std::ceil(std::log10(high)));
  auto px = [&](double x) { return kLeft + std::log(x / low) / std::log(high / low) * (kRight - kLeft); };
  const double height = kTop + kRow * static_cast<double>(rows.size()) + 40;
  std::ostringstream svg;
  svg << "<svg class=\"lab-chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << kWidth << " "
      << svg_number(height) << "\" width=\"" << kWidth << "\" height=\"" << svg_number(height)
      << "\" font-family=\"sans-serif\" font-size=\"12\" role=\"img\"><title>Each bug's slowdown: measured, the "
         "course's range and the predictions</title>\n";
  // Grid lines at 1, 2 and 5 of every decade; the decades labelled first, then the 2s and 5s
  // only where their label keeps clear of the others (over many decades, as when a busy
  // machine's interval reaches 0.001x, they would run into the decades' labels).
  std::vector<std::pair<double, double>> labelled;  // each label's left and right edge
  for (const bool decades : {true, false}) {
    for (double tick = low; tick <= high * 1.0001; tick *= 10) {
      for (double step : {1.0, 2.0, 5.0}) {
        const double x = tick * step;
        if (x > high * 1.0001) break;
        if ((step == 1.0) != decades) continue;
        svg << "<line x1=\"" << svg_number(px(x)) << "\" y1=\"" << kTop - 6 << "\" x2=\"" << svg_number(px(x))
            << "\" y2=\"" << svg_number(height - 34) << "\" stroke=\"" << (decades ? "#9ca3af" : "#e5e7eb") << "\"/>\n";
        const std::string text = tick_text(x) + "x";
        // Digits, '.' and 'x' in a sans-serif face: at most 0.6 em each, a width never short.
        const double half = 0.6 * (decades ? 12 : 10) * static_cast<double>(text.size()) / 2;
        const double left = px(x) - half, right = px(x) + half;
        const bool clear = std::none_of(labelled.begin(), labelled.end(), [&](const std::pair<double, double>& other) {
          return left < other.second + 4 && right > other.first - 4;
        });
        if (!clear) continue;
        labelled.emplace_back(left, right);
        svg << "<text x=\"" << svg_number(px(x)) << "\" y=\"" << svg_number(height - 20) << "\" text-anchor=\"middle\""
            << (decades ? "" : " fill=\"#6b7280\" font-size=\"10\"") << ">" << text << "</text>\n";
      }
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const LabRow& row = rows[i];
    const double y = kTop + kRow * static_cast<double>(i) + kRow / 2;
    svg << "<text x=\"" << kLeft - 8 << "\" y=\"" << svg_number(y + 4) << "\" text-anchor=\"end\">"
        << xml_escape(row.bug) << "</text>\n";
    if (row.headline.expected) {
      const double from = px(row.headline.expected->min), to = px(row.headline.expected->max);
      svg << "<rect class=\"range\" x=\"" << svg_number(from) << "\" y=\"" << svg_number(y - 9) << "\" width=\""
          << svg_number(std::max(2.0, to - from)) << "\" height=\"18\" fill=\"#fde68a\"><title>the course's range "
          << xml_escape(expected_text(row)) << "</title></rect>\n";
    }
    const Estimate& measured = row.headline.measured;
    if (measured.samples > 0 && measured.median > 0) {
      svg << "<line x1=\"" << svg_number(px(std::max(measured.low, low))) << "\" y1=\"" << svg_number(y) << "\" x2=\""
          << svg_number(px(std::min(measured.high, high))) << "\" y2=\"" << svg_number(y)
          << "\" stroke=\"#1f2937\" stroke-width=\"2\"/>\n<circle cx=\"" << svg_number(px(measured.median)) << "\" cy=\""
          << svg_number(y) << "\" r=\"5\" fill=\"#1f2937\"><title>measured " << xml_escape(format_slowdown(measured))
          << " (95% interval " << xml_escape(slowdown_text(measured.low)) << " – "
          << xml_escape(slowdown_text(measured.high)) << ")</title></circle>\n";
    }
    if (row.prediction && row.prediction->unavailable.empty() && row.prediction->predicted() > 0) {
      const double x = px(row.prediction->predicted());
      svg << "<path d=\"M" << svg_number(x) << "," << svg_number(y - 7) << "l6,7l-6,7l-6,-7z\" fill=\"none\" "
             "stroke=\"#2563eb\" stroke-width=\"2\"><title>predicted here "
          << xml_escape(slowdown_text(row.prediction->predicted())) << "</title></path>\n";
    }
    if (const double on_gpu = gpu_prediction(row); on_gpu > 0) {
      const double x = px(on_gpu);
      svg << "<path d=\"M" << svg_number(x) << "," << svg_number(y - 7) << "l6,12h-12z\" fill=\"#b3154f\"><title>predicted on "
          << xml_escape(gpu) << " " << xml_escape(slowdown_text(on_gpu)) << "</title></path>\n";
    }
  }
  // The legend, above the rows.
  svg << "<rect x=\"" << kLeft << "\" y=\"6\" width=\"14\" height=\"10\" fill=\"#fde68a\"/><text x=\"" << kLeft + 18
      << "\" y=\"15\">the course's range</text><circle cx=\"" << kLeft + 150 << "\" cy=\"11\" r=\"5\" fill=\"#1f2937\"/>"
      << "<text x=\"" << kLeft + 158 << "\" y=\"15\">measured, 95% interval</text><path d=\"M" << kLeft + 310
      << ",4l6,7l-6,7l-6,-7z\" fill=\"none\" stroke=\"#2563eb\" stroke-width=\"2\"/><text x=\"" << kLeft + 320
      << "\" y=\"15\">predicted here</text>";
  if (!gpu.empty())
    svg << "<path d=\"M" << kLeft + 420 << ",5l6,12h-12z\" fill=\"#b3154f\"/><text x=\"" << kLeft + 430
        << "\" y=\"15\">predicted on " << xml_escape(gpu) << "</text>";
  svg << "\n</svg>\n";
  return svg.str();
}


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
  row.stopped_because = comparison.stopped_because;
  row.timed_seconds = comparison.timed_seconds;
  row.budget_seconds = comparison.budget_seconds;
  row.same_tokens = comparison.same_tokens;
  row.backend = comparison.buggy.result.backend;
  row.device = comparison.buggy.result.device;
  row.machine = to_json(comparison.machine);
  if (comparison.fixed.result.during) row.machine_during = to_json(*comparison.fixed.result.during);
  row.contended = comparison.fixed.result.contended();
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
  out << "| bug | switched on | fixed decode tok/s | buggy decode tok/s | decode slowdown | end-to-end slowdown | "
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
      << "% of it or not, \"(busy)\", \"(roofs noisy)\" or \"(device waiting on the host N%)\" where the machine was not quiet (the "
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
                          {"stopped_because", row.stopped_because},
                          {"timed_seconds", row.timed_seconds},
                          {"budget_seconds", row.budget_seconds},
                          {"same_tokens", row.same_tokens},
                          {"backend", row.backend},
                          {"device", row.device},
                          {"machine", row.machine},
                          {"machine_during", row.machine_during},
                          {"contended", row.contended},
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
  row.stopped_because = json.value("stopped_because", "");
  row.timed_seconds = json.value("timed_seconds", 0.0);  // absent in rows written before these fields
  row.budget_seconds = json.value("budget_seconds", 0.0);
  row.same_tokens = field("same_tokens", &nlohmann::json::is_boolean).get<bool>();
  row.backend = field("backend", &nlohmann::json::is_string).get<std::string>();
  row.device = field("device", &nlohmann::json::is_string).get<std::string>();
  row.machine = json.value("machine", nlohmann::json::object());
  row.machine_during = json.value("machine_during", nlohmann::json());
  row.contended = json.value("contended", false);
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
  // The title counts what ran: --only may run fewer than the lab's five.
  html << "<header><h1>decodelab: "
       << (rows.size() == 5 ? std::string("the five-bug lab")
                            : "the lab, " + std::to_string(rows.size()) + (rows.size() == 1 ? " bug" : " bugs"))
       << "</h1>";
  if (!rows.empty())
    html << "<p>" << xml_escape(rows.front().device) << " · " << xml_escape(rows.front().backend) << " backend</p>";
  html << "</header>\n";
  // One machine note for the page, where it is seen: which bugs ran on a busy machine.
  std::vector<std::string> busy;
  for (const LabRow& row : rows)
    if (row.contended || (row.machine.is_object() && row.machine.value("contended", false))) busy.push_back(row.bug);
  if (!busy.empty()) {
    std::string names;
    for (const std::string& name : busy) names += (names.empty() ? "" : ", ") + name;
    html << "<p class=\"caveat\">The machine was busy while " << xml_escape(names)
         << (busy.size() == 1 ? " was" : " were")
         << " measured (other work took the cores): those figures are marked contended and need not be this "
            "machine's; each bug's report says what was seen.</p>\n";
  }
  const std::vector<std::string> elsewhere = elsewhere_devices(predictions_of(rows));
  html << "<section><h2>Each bug's slowdown</h2>" << slowdown_chart(rows, elsewhere.empty() ? "" : elsewhere.front())
       << "</section>\n<section><h2>Each bug, fixed vs buggy</h2>";
  // Two tables, not one wide one: the measurement, then the prediction beside it, so that no
  // column hides behind a scrollbar on a laptop's screen.
  std::ostringstream table;
  table << "<table><tr><th>bug</th><th class=\"left\">switched on</th><th>fixed decode tok/s</th><th>buggy decode tok/s</th>"
           "<th title=\"decode_slowdown\">decode slowdown</th><th title=\"end_to_end_slowdown\">end-to-end slowdown</th>"
           "<th>expected</th><th>verdict</th><th>pairs</th>"
           "<th>same tokens</th><th>pages</th></tr>";
  std::ostringstream predicted;
  predicted << "<table><tr><th>bug</th><th>predicted</th><th>error</th><th>vs prediction</th>";
  for (const std::string& device : elsewhere) predicted << "<th>on " << xml_escape(device) << "</th>";
  predicted << "</tr>";
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
          << "</td><td>" << (row.same_tokens ? "yes" : "NO") << "</td><td>";
    if (has_report) table << "<a href=\"" << xml_escape(row.bug) << "/report.html\">report</a>";
    if (has_attribution)
      table << (has_report ? " · " : "") << "<a href=\"" << xml_escape(row.bug) << "/attribution.html\">why slower</a>";
    table << "</td></tr>";
    predicted << "<tr><td>" << xml_escape(row.bug) << "</td>" << prediction_html_cells(row.prediction, elsewhere)
              << "</tr>";
  }
  table << "</table>";
  predicted << "</table>";
  html << scrolling_table(table.str()) << "<h3>Against the prediction</h3>" << scrolling_table(predicted.str());
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
