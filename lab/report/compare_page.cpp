// A comparison's report pages (see compare_page.h).
#include "lab/report/compare_page.h"

#include <cstdio>

#include "lab/bug_lessons.h"
#include "lab/predict/predict.h"
#include "lab/report/run_report.h"
#include "profiling/atomic_file.h"
#include "profiling/report/html_page.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

std::string escape(const std::string& text) { return xml_escape(text); }

std::string lesson_html(const Comparison& comparison) {
  const Scenario& scenario = comparison.buggy.scenario;
  std::string html;
  for (const BugLesson* lesson : lessons_of(scenario.bugs)) {
    html += "<div class=\"lesson\"><h3>" + escape(lesson->title.empty() ? lesson->bug : lesson->title) + "</h3>";
    for (const auto& [lead, text] : lesson->parts) {
      html += "<p>" + (lead.empty() ? "" : "<b>" + escape(lead) + ":</b> ") + escape(text) + "</p>";
    }
    html += "</div>";
  }
  html += "<p class=\"note\">From bugs/ (each bug's file opens with its lesson). This scenario: " +
          escape(scenario.name) + (scenario.description.empty() ? "" : ", " + escape(scenario.description)) +
          "; switched on: " + escape(scenario.bugs.describe()) + ".</p>";
  return html;
}

// The measured slowdown with its interval and, beside it, the prediction of the same figure.
std::string slowdown_figure(const HeadlineFigure& figure, bool judged, const RowPrediction& prediction) {
  const Estimate& measured = figure.estimate;
  // One confidence on the page: the 95% every interval is called by, unless too few pairs give less.
  const bool full = measured.confidence >= 0.95;
  std::string extra = "<div class=\"predicted\">" + std::string(full ? "95% interval " : "interval ") +
                      escape(slowdown_text(measured.low)) + " – " + escape(slowdown_text(measured.high)) +
                      (full ? "" : " (only " + escape(format_percent(measured.confidence)) +
                                       " confidence: too few pairs for 95%)") +
                      "</div>";
  if (prediction.unavailable.empty()) {
    const bool decode = figure.key == "decode_slowdown";
    const double predicted = decode ? prediction.here.decode_slowdown : prediction.here.end_to_end_slowdown;
    const double error = decode ? prediction.decode_slowdown_error : prediction.end_to_end_slowdown_error;
    char exact[40];
    std::snprintf(exact, sizeof exact, "%.17g", predicted);
    extra += "<div class=\"predicted\" data-predicted=\"predicted_" + figure.key + "\" data-value=\"" + exact +
            "\"><span title=\"predicted_" + escape(figure.key) + "\">predicted</span> " +
            escape(ratio_text(predicted)) + " on " + escape(device_in_words(prediction.here.device)) + " · <span title=\"" +
            escape(figure.key) + "_prediction_error\">error</span> " + escape(signed_percent(error)) + "</div>";
  }
  if (judged) extra += "<div class=\"predicted\">the slowdown the lesson is about</div>";
  return headline_figure_html(figure, judged ? "figure judged" : "figure", extra);
}

std::string slowdown_html(const Comparison& comparison, const ReportSummary& summary) {
  const SlowdownReading& headline = comparison.headline;
  const RowPrediction& prediction = comparison.prediction;
  const std::string judged = std::string(to_string(headline.metric)) + "_slowdown";
  std::string html = "<div class=\"slowdown\">";
  for (const HeadlineFigure& figure : summary.figures) html += slowdown_figure(figure, figure.key == judged, prediction);
  html += "</div><div class=\"reading\">";
  const std::string verdict = to_string(headline.verdict.kind);
  html += "<p><b>Verdict</b> on the <span title=\"" + escape(judged) + "\">" +
          (headline.metric == SlowdownMetric::Decode ? "decode slowdown" : "end-to-end slowdown") + "</span>" +
          (headline.expected ? " (expected " + escape(format_range(*headline.expected)) + ")" : " (no expected range)") +
          ": <span class=\"verdict " + verdict_class(verdict) + "\">" + escape(verdict) + "</span> " +
          escape(headline.verdict.sentence) + ".</p>";
  if (prediction.unavailable.empty()) {
    html += "<p><b>Against the prediction</b> (<span title=\"" + escape(judged) + "\">" +
            (headline.metric == SlowdownMetric::Decode ? "decode slowdown" : "end-to-end slowdown") + "</span>, within ±" +
            escape(format_number(kPredictionTolerance * 100, 2)) + "%): <span class=\"verdict " +
            verdict_class(prediction.verdict) + "\">" + escape(prediction.verdict) + "</span> predicted " +
            escape(ratio_text(prediction.predicted())) + ", error " + escape(signed_percent(prediction.error())) +
            (prediction.within_interval ? ", inside the measured 95% interval" : ", outside the measured 95% interval") +
            ". " + escape(prediction.sentence) + ".</p>";
  } else {
    html += "<p><b>No prediction:</b> " + escape(prediction.unavailable) + ".</p>";
  }
  html += "<p class=\"note\">" + escape(slowdown_definition()) + " (" + std::to_string(comparison.pairs) +
          " pairs: " + escape(comparison.stopped_because) + "); " +
          (comparison.same_tokens ? "both runs generated the same tokens" : "THE RUNS GENERATED DIFFERENT TOKENS") +
          ". Predicted: the same slowdown from the roofline model with this device's roofs and fixed costs; error: "
          "measured / predicted - 1 (docs/metrics.md).</p>";
  for (const std::string& note : drift_notes(comparison)) html += "<p class=\"note\">Note: " + escape(note) + ".</p>";
  html += "</div>";
  return html;
}

std::vector<PageLink> page_links(PagePlace place, bool attribution_page) {
  std::vector<PageLink> links;
  if (place == PagePlace::InLab) links.push_back({"../index.html", "← the lab: every bug"});
  if (attribution_page) {
    links.push_back({"report.html", "← the comparison's report"});
  } else {
    links.push_back({"attribution.html", "why slower, on its own page →"});
  }
  return links;
}

std::string attribution_page(const Comparison& comparison, const std::string& title, PagePlace place) {
  const RunAnalysis& buggy = comparison.buggy.analysis;
  std::string body = "<header><h1>" + escape(title) + "</h1><p>" + escape(buggy.device) + " · " +
                     escape(buggy.backend) + " backend · " + escape(comparison.buggy.scenario.bugs.describe()) +
                     "</p></header>\n";
  body += "<section><h2>Why slower</h2>" + attribution_html(comparison.attribution) +
          "<p class=\"note\">Each cause is its median over the pairs of repeats; \"unexplained\" is what the medians "
          "of the parts leave of the measured difference (docs/metrics.md, \"Why slower: attribution\").</p></section>\n";
  body += "<section>" + prediction_html(comparison.prediction) + "</section>\n";
  return html_page(title, body, page_links(place, true));
}

}  // namespace

std::string verdict_class(const std::string& verdict) {
  if (verdict.empty() || verdict == "-") return "none";
  std::string name = verdict;
  for (char& c : name) {
    if (c == ' ') c = '-';
  }
  return name;
}

std::vector<LabelledRun> compared_runs(const Comparison& comparison) {
  return {{"fixed", &comparison.fixed.analysis, headline_figures(comparison.fixed.result), &comparison.machine},
          {"buggy", &comparison.buggy.analysis, headline_figures(comparison.buggy.result), &comparison.machine}};
}

ReportSummary comparison_summary(const Comparison& comparison) {
  ReportSummary summary;
  // Words on the page, the JSON name in the tooltip.
  auto add = [&](const char* key, const char* label, const Estimate& slowdown) {
    if (slowdown.samples == 0) return;
    summary.figures.push_back({key, label, slowdown_text(slowdown.median), slowdown});
  };
  add("decode_slowdown", "decode slowdown", comparison.decode_slowdown);
  add("end_to_end_slowdown", "end-to-end slowdown", comparison.end_to_end_slowdown);
  const SlowdownReading& headline = comparison.headline;
  summary.sentences.push_back("The lesson is about the " + std::string(slowdown_words(headline.metric)) +
                              (headline.expected ? ", expected " + format_range(*headline.expected) : "") +
                              ". Verdict: " + to_string(headline.verdict.kind) + ": " + headline.verdict.sentence + ".");
  const RowPrediction& prediction = comparison.prediction;
  if (prediction.unavailable.empty()) {
    summary.sentences.push_back("Predicted on " + device_in_words(prediction.here.device) + ": " +
                                slowdown_words(prediction.of) + " " + ratio_text(prediction.predicted()) + ", prediction error " +
                                signed_percent(prediction.error()) + " (" + prediction.verdict +
                                (prediction.within_interval ? ", inside the measured 95% interval" : "") + "). " +
                                prediction.sentence + ".");
  }
  summary.sentences.push_back("Why slower: " + comparison.attribution.headline + " (attribution.html)");
  summary.story.push_back({"The bug", lesson_html(comparison), "lesson"});
  summary.story.push_back({"Slowdown", slowdown_html(comparison, summary), "slowdown"});
  summary.story.push_back({"Why slower", attribution_html(comparison.attribution), "why-slower"});
  return summary;
}

void write_comparison_report(const std::filesystem::path& directory, const Comparison& comparison,
                             const std::string& title, PagePlace place) {
  ReportSummary summary = comparison_summary(comparison);
  summary.links = page_links(place, false);
  std::filesystem::create_directories(directory);
  save_file_atomically(directory / "attribution.html",
                       attribution_page(comparison, "why " + comparison.buggy.scenario.name + " is slower", place));
  write_report_directory(directory, compared_runs(comparison), title, &summary);  // report.html last
}

}  // namespace decodelab
