// The HTML report: one self-contained page (inline CSS and SVG; no script, font, image or
// other fetch), read top-down like the seed's discipline — summary, roofline, step
// timeline, then the tables — and the report directory writer. Every file of the
// directory is written to a temporary name and renamed into place.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "profiling/atomic_file.h"
#include "profiling/report.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

const char* kStyle = R"(
:root { color-scheme: light; }
body { margin: 0; background: #f3f4f6; color: #111827; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 40px; }
header h1 { font-size: 22px; margin: 0 0 4px; }
header p { margin: 0; color: #4b5563; }
section { background: #fff; border: 1px solid #e5e7eb; border-radius: 10px; padding: 16px 20px; margin-top: 18px; }
h2 { font-size: 16px; margin: 0 0 10px; }
h3 { font-size: 14px; margin: 14px 0 6px; color: #374151; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 14px; }
.card { border: 1px solid #e5e7eb; border-left: 5px solid var(--run); border-radius: 8px; padding: 12px 14px; }
.card .label { font-weight: 700; color: var(--run); text-transform: uppercase; letter-spacing: .04em; font-size: 12px; }
.card .sentence { font-size: 15px; margin: 6px 0 10px; }
.figures { display: grid; grid-template-columns: repeat(3, 1fr); gap: 8px 12px; }
.figures div { font-size: 12px; color: #6b7280; }
.figures b { display: block; font-size: 16px; color: #111827; font-variant-numeric: tabular-nums; }
.figures small { font-size: 12px; color: #6b7280; font-weight: 500; }
.figure.noisy b { color: #92400e; }
table { border-collapse: collapse; width: 100%; font-size: 12.5px; font-variant-numeric: tabular-nums; }
th, td { padding: 5px 8px; border-bottom: 1px solid #f0f1f3; text-align: right; white-space: nowrap; }
th { color: #4b5563; font-weight: 600; border-bottom: 1px solid #d1d5db; background: #fafafa; }
th:first-child, td:first-child { text-align: left; }
tr:hover td { background: #f9fafb; }
.pill { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 11.5px; font-weight: 600; }
.compute { background: #dbeafe; color: #1e40af; } .memory { background: #ccfbf1; color: #115e59; }
.latency { background: #fef3c7; color: #92400e; } .overhead { background: #fee2e2; color: #991b1b; }
.share { display: inline-block; height: 8px; background: var(--bar); border-radius: 2px; vertical-align: middle; margin-right: 6px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.chart { overflow-x: auto; } .chart svg { max-width: 100%; height: auto; }
.caveat { background: #fffbeb; border: 1px solid #fcd34d; color: #78350f; border-radius: 6px; padding: 6px 10px; font-size: 12.5px; margin: 0 0 10px; }
.note { color: #6b7280; font-size: 12.5px; margin: 8px 0 0; }
footer { color: #6b7280; font-size: 12px; margin-top: 18px; }
)";

std::string escape(const std::string& text) { return xml_escape(text); }

std::string pill(Limiter limiter, std::optional<Limiter> near = std::nullopt) {
  const std::string name = limiter_name(limiter);
  return "<span class=\"pill " + name + "\">" + escape(limiter_cell(limiter, near)) + "</span>";
}

std::string figure(const std::string& name, const std::string& value) {
  return "<div><b>" + escape(value) + "</b>" + escape(name) + "</div>";
}

// A headline figure: the median as the CLI prints it, its interval, and the JSON key and
// exact median as data attributes (what a test compares with --json).
std::string headline_figure(const HeadlineFigure& figure) {
  char median[40];
  std::snprintf(median, sizeof median, "%.17g", figure.estimate.median);
  return "<div class=\"figure" + std::string(figure.estimate.noisy ? " noisy" : "") + "\" data-metric=\"" +
         escape(figure.key) + "\" data-median=\"" + median + "\"><b>" + escape(figure.value) + " <small>" +
         escape(format_interval(figure.estimate)) + "</small></b>" + escape(figure.label) + " (n=" +
         std::to_string(figure.estimate.samples) + ")</div>";
}

std::string run_card(const LabelledRun& run, size_t index) {
  const RunAnalysis& analysis = *run.analysis;
  std::ostringstream html;
  html << "<div class=\"card\" style=\"--run: " << run_colour(index) << "\"><div class=\"label\">" << escape(run.label)
       << "</div><p class=\"sentence\">" << escape(analysis.summary) << "</p>";
  if (run.machine && run.machine->contended) {
    html << "<p class=\"caveat\">The machine was busy while this ran: " << escape(run.machine->summary()) << ". "
         << escape(run.machine->advice) << ".</p>";
  }
  for (const std::string& note : analysis.notes) html << "<p class=\"caveat\">" << escape(note) << "</p>";
  if (!run.headline.empty()) {
    html << "<div class=\"figures\">";
    for (const HeadlineFigure& figure : run.headline) html << headline_figure(figure);
    html << "</div><p class=\"note\">Medians over every timed repeat, ± the 95% interval of the median; the "
            "figures below come from the traced repeats.</p>";
  }
  html << "<div class=\"figures\">";
  const size_t runs_recorded = std::max<size_t>(1, analysis.runs.size());
  if (run.headline.empty()) {
    html << figure(runs_recorded > 1 ? "host time per traced run (" + std::to_string(runs_recorded) + " runs)" : "host time",
                   format_seconds(analysis.timeline.span_seconds / static_cast<double>(runs_recorded)));
  }
  html << figure("device busy share", format_percent(analysis.timeline.busy_fraction()));
  html << figure("device idle", format_seconds(analysis.timeline.idle_seconds));
  if (const PhaseStats* decode = analysis.phase(Phase::Decode); decode && decode->steps > 0) {
    const double steps = static_cast<double>(decode->steps);
    html << figure("ops per step", format_number(static_cast<double>(decode->timeline.ops) / steps, 3));
    html << figure("host syncs per step", format_number(static_cast<double>(decode->timeline.syncs) / steps, 2));
    html << figure("decode ops' bandwidth", format_bandwidth(decode->point.achieved_bandwidth()));
    html << figure("decode bytes per step", format_bytes(decode->point.bytes / steps));
    html << figure("decode FLOPs per step", format_flops(decode->point.flops / steps));
  }
  html << "</div></div>\n";
  return html.str();
}

std::string group_row(const OpGroup& group, const std::string& name) {
  const RooflinePoint& point = group.point;
  std::ostringstream html;
  char width[32];
  std::snprintf(width, sizeof width, "%.0f", 48 * group.share_of_device_time);
  const bool has_flops = point.flops > 0;  // data movement: no FLOP figures to show
  html << "<tr><td><span class=\"swatch\" style=\"background:" << category_colour(group.category) << "\"></span>" << escape(name)
       << "</td><td>" << escape(group.precision) << "</td><td>" << point.count << "</td><td>" << escape(format_seconds(point.seconds))
       << "</td><td><span class=\"share\" style=\"--bar:" << category_colour(group.category) << ";width:" << width << "px\"></span>"
       << escape(format_percent(group.share_of_device_time)) << "</td><td>" << (has_flops ? escape(format_flops(point.flops)) : "—") << "</td><td>"
       << escape(format_bytes(point.bytes)) << "</td><td>" << (has_flops ? format_number(point.intensity(), 2) : "—")
       << "</td><td>" << (has_flops ? escape(format_flop_rate(point.achieved_flops())) : "—") << "</td><td>"
       << escape(format_bandwidth(point.achieved_bandwidth()))
       << "</td><td>" << escape(format_percent(point.roof_fraction())) << "</td><td>" << pill(group.limiter, group.near) << "</td></tr>\n";
  return html.str();
}

const char* kGroupHeader =
    "<tr><th>%s</th><th>compute roof</th><th>ops</th><th>device time</th><th>share</th><th>FLOPs</th><th>bytes</th>"
    "<th>FLOP/B</th><th>achieved</th><th>bandwidth</th><th>%% of roof</th><th>limiter</th></tr>\n";

std::string group_header(const char* first_column) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, kGroupHeader, first_column);
  return buffer;
}

std::string phase_table(const RunAnalysis& analysis) {
  std::ostringstream html;
  html << "<table><tr><th>phase</th><th>steps</th><th>host time</th><th>device busy</th><th>device idle</th><th>gaps</th>"
          "<th>largest gap</th><th>syncs</th><th>ops</th><th>% of roof</th><th>limiter</th></tr>\n";
  for (const PhaseStats& phase : analysis.phases) {
    const TimelineStats& timeline = phase.timeline;
    html << "<tr><td>" << phase_name(phase.phase) << "</td><td>" << phase.steps << "</td><td>"
         << escape(format_seconds(timeline.span_seconds)) << "</td><td>" << escape(format_seconds(timeline.busy_seconds))
         << "</td><td>" << escape(format_seconds(timeline.idle_seconds)) << " (" << escape(format_percent(timeline.idle_fraction()))
         << ")</td><td>" << timeline.gaps << "</td><td>" << escape(format_seconds(timeline.largest_gap_seconds)) << "</td><td>"
         << timeline.syncs << "</td><td>" << timeline.ops << "</td><td>" << escape(format_percent(phase.point.roof_fraction()))
         << "</td><td>" << pill(phase.limiter, phase.near) << "</td></tr>\n";
  }
  html << "</table>\n";
  return html.str();
}

std::string roofs_table(const DeviceSpec& spec) {
  // One column per roof set the spec has: datasheet, measured, or both.
  std::vector<std::pair<const char*, const Roofs*>> sets;
  if (spec.datasheet) sets.push_back({"datasheet", &*spec.datasheet});
  if (spec.measured) sets.push_back({"measured", &*spec.measured});
  std::ostringstream html;
  html << "<table><tr><th>roof</th>";
  for (const auto& [name, roofs] : sets) html << "<th>" << name << "</th>";
  html << "</tr>\n";
  auto row = [&](const std::string& name, auto cell) {
    html << "<tr><td>" << escape(name) << "</td>";
    for (const auto& [set_name, roofs] : sets) html << "<td>" << escape(cell(*roofs)) << "</td>";
    html << "</tr>\n";
  };
  auto rate = [](double value) { return value > 0 ? format_flop_rate(value) : std::string("—"); };
  row("memory bandwidth", [](const Roofs& r) { return r.bandwidth > 0 ? format_bandwidth(r.bandwidth) : std::string("—"); });
  row("fp32", [&](const Roofs& r) { return rate(r.fp32_flops); });
  row("tf32", [&](const Roofs& r) { return rate(r.tf32_flops); });
  row("fp16", [&](const Roofs& r) { return rate(r.fp16_flops); });
  row("bf16", [&](const Roofs& r) { return rate(r.bf16_flops); });
  for (Precision precision : {Precision::Fp32, Precision::Fp16}) {
    row(std::string("ridge point, ") + precision_name(precision), [&](const Roofs& r) {
      return r.bandwidth > 0 && r.flops(precision) > 0 ? format_number(r.ridge_point(precision)) + " FLOP/B" : std::string("—");
    });
  }
  html << "</table>\n";
  for (const auto& [name, roofs] : sets) {
    const std::string quality = roofs->age_and_spread(std::time(nullptr));
    html << "<p class=\"note\">" << name << (quality.empty() ? "" : " (" + escape(quality) + ")") << ": "
         << escape(roofs->source) << "</p>\n";
  }
  if (spec.cache_bytes > 0) html << "<p class=\"note\">last-level cache: " << escape(format_bytes(spec.cache_bytes)) << "</p>\n";
  return html.str();
}

}  // namespace

std::string report_html(const std::vector<LabelledRun>& runs, const std::string& title, const ReportSummary* summary) {
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" << escape(title) << "</title>\n<style>"
       << kStyle << "</style>\n</head>\n<body>\n<main>\n";
  html << "<header><h1>" << escape(title) << "</h1>";
  if (!runs.empty()) {
    const RunAnalysis& first = *runs.front().analysis;
    html << "<p>" << escape(first.device) << " · " << escape(first.backend) << " backend";
    if (!first.model.name.empty()) html << " · " << escape(first.model.name);
    if (!first.dtype.empty()) html << " " << escape(first.dtype);
    html << " · roofs: " << escape(first.device_spec.roofs_provenance(std::time(nullptr))) << "</p>";
  }
  html << "</header>\n";

  if (summary && (!summary->figures.empty() || !summary->sentences.empty())) {
    html << "<section><h2>Slowdown</h2><div class=\"figures\">";
    for (const HeadlineFigure& figure : summary->figures) html << headline_figure(figure);
    html << "</div>";
    for (const std::string& sentence : summary->sentences) html << "<p class=\"note\">" << escape(sentence) << "</p>";
    html << "</section>\n";
  }
  html << "<section><h2>Summary</h2><div class=\"cards\">\n";
  for (size_t r = 0; r < runs.size(); ++r) html << run_card(runs[r], r);
  html << "</div></section>\n";

  html << "<section><h2>Roofline</h2><div class=\"chart\">\n" << roofline_svg(runs) << "</div>\n"
       << "<p class=\"note\">One point per op category and phase at its arithmetic intensity and achieved FLOP/s. A point "
          "on the sloped roof is memory-bound, under the flat roof compute-bound; far below both, neither unit is busy.</p>"
          "</section>\n";

  html << "<section><h2>Decode step timeline</h2>\n";
  double tallest_step = 0;  // one time scale for every run, so bars compare across runs
  for (const LabelledRun& run : runs) {
    for (const StepStats& step : run.analysis->steps) tallest_step = std::max(tallest_step, step.timeline.device_seconds());
  }
  for (const LabelledRun& run : runs) {
    html << "<div class=\"chart\">" << step_timeline_svg(*run.analysis, run.label, tallest_step) << "</div>\n";
  }
  html << "<p class=\"note\">Each bar is one decode step on the device: busy time by op category, then the time the device "
          "sat idle waiting for the host (hatched).</p></section>\n";

  html << "<section><h2>Phases</h2>\n";
  for (const LabelledRun& run : runs) html << "<h3>" << escape(run.label) << "</h3>" << phase_table(*run.analysis);
  html << "</section>\n";

  html << "<section><h2>Where the device time went (op category × phase)</h2>\n";
  for (const LabelledRun& run : runs) {
    html << "<h3>" << escape(run.label) << "</h3><table>" << group_header("phase · category");
    for (const OpGroup& group : run.analysis->categories) {
      html << group_row(group, std::string(phase_name(group.phase)) + " · " + op_category_name(group.category));
    }
    html << "</table>\n";
  }
  html << "</section>\n";

  html << "<section><h2>Top ops</h2>\n";
  for (const LabelledRun& run : runs) {
    html << "<h3>" << escape(run.label) << "</h3><table>" << group_header("phase · op · place");
    for (const OpGroup& group : run.analysis->top_ops) {
      html << group_row(group, std::string(phase_name(group.phase)) + " · " + group.name + (group.label.empty() ? "" : " · " + group.label));
    }
    html << "</table>\n";
  }
  html << "</section>\n";

  if (!runs.empty()) {
    const RunAnalysis& first = *runs.front().analysis;
    html << "<section><h2>Device roofs</h2>" << roofs_table(first.device_spec) << "</section>\n";
    html << "<footer>" << escape(limiter_rules_text(first.thresholds, first.gpu)) << " Result schema version "
         << RunAnalysis::kSchemaVersion << ".</footer>\n";
  }
  html << "</main>\n</body>\n</html>\n";
  return html.str();
}

void write_report_directory(const std::filesystem::path& directory, const std::vector<LabelledRun>& runs,
                            const std::string& title, const ReportSummary* summary) {
  std::filesystem::create_directories(directory);
  save_file_atomically(directory / "roofline.svg", roofline_svg(runs));
  save_file_atomically(directory / "ops.csv", ops_csv(runs));
  nlohmann::json result = report_json(runs);
  if (summary) {
    for (const HeadlineFigure& figure : summary->figures) {
      result["summary"]["metrics"][figure.key] = figure.estimate.median;
      result["summary"]["intervals"][figure.key] = to_json(figure.estimate);
    }
    result["summary"]["sentences"] = summary->sentences;
  }
  save_file_atomically(directory / "result.json", result.dump(2) + "\n");
  // The page last: once report.html exists, everything it describes is in place.
  save_file_atomically(directory / "report.html", report_html(runs, title, summary));
}

}  // namespace decodelab
