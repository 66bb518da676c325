// The HTML report: one self-contained page (inline CSS and SVG; no script, font, image or
// other fetch), read top-down like the seed's discipline — a comparison's story first
// (lesson, slowdown, why slower), then summary, roofline, step timeline, then the tables,
// each in a box that scrolls when it is wider than its card — and the report directory
// writer. Every file of the directory is written to a temporary name and renamed into place.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "profiling/atomic_file.h"
#include "profiling/report/report.h"
#include "profiling/model/decode_reading.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

std::string escape(const std::string& text) { return xml_escape(text); }

std::string pill(Limiter limiter, std::optional<Limiter> near = std::nullopt) {
  const std::string name = limiter_name(limiter);
  return "<span class=\"pill " + name + "\">" + escape(limiter_cell(limiter, near)) + "</span>";
}

std::string figure(const std::string& name, const std::string& value) {
  return "<div><b>" + escape(value) + "</b>" + escape(name) + "</div>";
}

std::string headline_figure(const HeadlineFigure& figure) { return headline_figure_html(figure); }

// The card's sentence: decode read from the medians the card shows (profiling/model/decode_reading.h),
// then the trace's reading of the other phases; the trace's summary alone where the card
// has no decode figures.
std::string card_sentence(const LabelledRun& run) {
  const RunAnalysis& analysis = *run.analysis;
  auto median = [&](const char* key) -> std::optional<double> {
    for (const HeadlineFigure& figure : run.headline)
      if (figure.key == key) return figure.estimate.median;
    return std::nullopt;
  };
  const auto gbps = median("decode_bandwidth_gbps"), wall = median("decode_wall_ms_per_step");
  const auto busy = median("decode_busy_ms_per_step"), tokens = median("decode_tokens_per_s");
  const std::optional<Precision> precision = parse_precision(analysis.dtype);
  if (!gbps || !wall || !busy || !tokens || !precision || !analysis.phase(Phase::Decode)) return analysis.summary;
  std::string sentence = read_decode(*gbps * 1e9, *wall, *busy, *tokens * *wall / 1e3, *precision,
                                     analysis.device_spec, analysis.thresholds)
                             .sentence;
  for (const PhaseStats& phase : analysis.phases)
    if (phase.phase == Phase::Prefill && phase.steps > 0) sentence += "; " + phase.summary;
  return sentence;
}

// One machine note for the page, above the cards: the runs of a comparison share their
// machine, and a note per card put the same warnings above each (the sentences of every
// machine the runs name, each once). "" when the machine was quiet and had nothing to note.
std::string machine_note(const std::vector<LabelledRun>& runs) {
  std::vector<std::string> sentences;
  auto add = [&](const std::string& sentence) {
    if (std::find(sentences.begin(), sentences.end(), sentence) == sentences.end()) sentences.push_back(sentence);
  };
  for (const LabelledRun& run : runs) {
    if (!run.machine) continue;
    if (run.machine->contended)
      add("The machine was busy while " + std::string(runs.size() > 1 ? "these ran" : "this ran") + ": " +
          run.machine->summary() + ". " + run.machine->advice + ".");
    for (const std::string& note : run.machine->notes) add(note + ".");
  }
  if (sentences.empty()) return "";
  std::string text;
  for (const std::string& sentence : sentences) text += (text.empty() ? "" : " ") + sentence;
  return "<p class=\"caveat\">" + escape(text) + "</p>";
}

std::string run_card(const LabelledRun& run, size_t index) {
  const RunAnalysis& analysis = *run.analysis;
  std::ostringstream html;
  html << "<div class=\"card\" style=\"--run: " << run_colour(index) << "\"><div class=\"label\">" << escape(run.label)
       << "</div><p class=\"sentence\">" << escape(card_sentence(run)) << "</p>";
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

// Device wall (busy + idle on the device's timeline, what the phase took) first; the host
// time inside the phase's ranges last: with an asynchronous device it is only the enqueue
// time, and can be far below the device's.
std::string phase_table(const RunAnalysis& analysis) {
  std::ostringstream html;
  html << "<table><tr><th>phase</th><th>steps</th><th>device wall</th><th>device busy</th><th>device idle</th>"
          "<th>gaps</th><th>largest gap</th><th>syncs</th><th>ops</th><th>host time</th><th>% of roof</th>"
          "<th>limiter</th></tr>\n";
  for (const PhaseStats& phase : analysis.phases) {
    const TimelineStats& timeline = phase.timeline;
    html << "<tr><td>" << phase_name(phase.phase) << "</td><td>" << phase.steps << "</td><td>"
         << escape(format_seconds(timeline.device_seconds())) << "</td><td>" << escape(format_seconds(timeline.busy_seconds))
         << "</td><td>" << escape(format_seconds(timeline.idle_seconds)) << " (" << escape(format_percent(timeline.idle_fraction()))
         << ")</td><td>" << timeline.gaps << "</td><td>" << escape(format_seconds(timeline.largest_gap_seconds)) << "</td><td>"
         << timeline.syncs << "</td><td>" << timeline.ops << "</td><td>" << escape(format_seconds(timeline.span_seconds))
         << "</td><td>" << escape(format_percent(phase.point.roof_fraction())) << "</td><td>" << pill(phase.limiter, phase.near)
         << "</td></tr>\n";
  }
  html << "</table>\n";
  return scrolling_table(html.str());
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
  const std::string table = scrolling_table(html.str());
  html.str("");
  html << table;
  for (const auto& [name, roofs] : sets) {
    const std::string quality = roofs->age_and_spread(std::time(nullptr));
    // A measured source is one long "; "-joined account (one clause per roof): a list reads, a
    // single sentence of that length does not.
    std::vector<std::string> clauses;
    for (size_t begin = 0; begin <= roofs->source.size();) {
      const size_t end = std::min(roofs->source.find("; ", begin), roofs->source.size());
      if (end > begin) clauses.push_back(roofs->source.substr(begin, end - begin));
      begin = end + 2;
    }
    html << "<p class=\"note\">" << name << (quality.empty() ? "" : " (" + escape(quality) + ")") << ":";
    if (clauses.size() <= 1) {
      html << " " << escape(roofs->source) << "</p>\n";
    } else {
      html << "</p><ul class=\"note\">";
      for (const std::string& clause : clauses) html << "<li>" << escape(clause) << "</li>";
      html << "</ul>\n";
    }
  }
  if (spec.cache_bytes > 0) html << "<p class=\"note\">last-level cache: " << escape(format_bytes(spec.cache_bytes)) << "</p>\n";
  return html.str();
}

}  // namespace

std::string headline_figure_html(const HeadlineFigure& figure, const std::string& css_class, const std::string& extra) {
  char median[40];
  std::snprintf(median, sizeof median, "%.17g", figure.estimate.median);
  return "<div class=\"" + escape(css_class) + std::string(figure.estimate.noisy ? " noisy" : "") + "\" data-metric=\"" +
         escape(figure.key) + "\" data-median=\"" + median + "\"><b>" + escape(figure.value) + " <small>" +
         escape(format_interval(figure.estimate)) + "</small></b>" +
         (figure.label == figure.key ? escape(figure.label)
                                     : "<span title=\"" + escape(figure.key) + "\">" + escape(figure.label) + "</span>") +
         " (n=" +
         std::to_string(figure.estimate.samples) + ")" + extra + "</div>";
}

std::string report_html(const std::vector<LabelledRun>& runs, const std::string& title, const ReportSummary* summary) {
  std::ostringstream html;
  html << "<header><h1>" << escape(title) << "</h1>";
  if (!runs.empty()) {
    const RunAnalysis& first = *runs.front().analysis;
    html << "<p>" << escape(first.device) << " · " << escape(first.backend) << " backend";
    if (!first.model.name.empty()) html << " · " << escape(first.model.name);
    if (!first.dtype.empty()) html << " " << escape(first.dtype);
    html << " · roofs: " << escape(first.device_spec.roofs_provenance(std::time(nullptr))) << "</p>";
  }
  html << "</header>\n";

  if (summary && !summary->story.empty()) {
    for (const ReportSection& section : summary->story) {
      html << "<section" << (section.id.empty() ? "" : " id=\"" + escape(section.id) + "\"") << "><h2>"
           << escape(section.title) << "</h2>" << section.html << "</section>\n";
    }
  } else if (summary && (!summary->figures.empty() || !summary->sentences.empty())) {
    html << "<section><h2>Slowdown</h2><div class=\"figures\">";
    for (const HeadlineFigure& figure : summary->figures) html << headline_figure(figure);
    html << "</div>";
    for (const std::string& sentence : summary->sentences) html << "<p class=\"note\">" << escape(sentence) << "</p>";
    html << "</section>\n";
  }
  html << "<section><h2>Summary</h2>" << machine_note(runs) << "<div class=\"cards\">\n";
  for (size_t r = 0; r < runs.size(); ++r) html << run_card(runs[r], r);
  html << "</div></section>\n";

  html << "<section><h2>Roofline</h2><div class=\"chart\">\n" << roofline_svg(runs) << "</div>\n"
       << "<p class=\"note\">One point per op category and phase at its arithmetic intensity and achieved FLOP/s. A point "
          "on the sloped roof is memory-bound, under the flat roof compute-bound; far below both, neither unit is busy."
       << (runs.size() == 2 ? " An arrow runs from a point's place in the " + escape(runs[0].label) + " run to its place in the " +
                                  escape(runs[1].label) + " run where the two differ."
                            : std::string())
       << "</p></section>\n";

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
  html << "<p class=\"note\">device wall: the phase on the device's timeline, busy + idle; host time: the host's clock "
          "inside the phase's ranges (enqueueing, host overhead, syncs), below the device wall when the device runs "
          "behind the host (docs/metrics.md).</p></section>\n";

  html << "<section><h2>Where the device time went (op category × phase)</h2>\n";
  for (const LabelledRun& run : runs) {
    std::string table = "<table>" + group_header("phase · category");
    for (const OpGroup& group : run.analysis->categories) {
      table += group_row(group, std::string(phase_name(group.phase)) + " · " + op_category_name(group.category));
    }
    html << "<h3>" << escape(run.label) << "</h3>" << scrolling_table(table + "</table>\n");
  }
  html << "</section>\n";

  html << "<section><h2>Top ops</h2>\n";
  for (const LabelledRun& run : runs) {
    std::string table = "<table>" + group_header("phase · op · place");
    for (const OpGroup& group : run.analysis->top_ops) {
      table += group_row(group, std::string(phase_name(group.phase)) + " · " + group.name + (group.label.empty() ? "" : " · " + group.label));
    }
    html << "<h3>" << escape(run.label) << "</h3>" << scrolling_table(table + "</table>\n");
  }
  html << "</section>\n";

  if (!runs.empty()) {
    const RunAnalysis& first = *runs.front().analysis;
    html << "<section><h2>Device roofs</h2>" << roofs_table(first.device_spec) << "</section>\n";
    html << "<footer>" << escape(limiter_rules_text(first.thresholds, first.gpu)) << " Result schema version "
         << RunAnalysis::kSchemaVersion << ".</footer>\n";
  }
  return html_page(title, html.str(), summary ? summary->links : std::vector<PageLink>{});
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
