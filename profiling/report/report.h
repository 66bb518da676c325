// Reports for people: the roofline SVG (log-log, the device's datasheet and measured
// roofs, one point per op category and phase, one colour per run, arrows where a bug moved
// a point), the step timeline SVG, one self-contained HTML page (no scripts, fonts or
// fetches; profiling/report/html_page.h frames it), and the report directory: report.html,
// roofline.svg, ops.csv, result.json, each written atomically.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/events/event_sink.h"
#include "profiling/report/html_page.h"
#include "profiling/report/printers.h"

namespace decodelab {

// A section a caller puts at the top of the page, before the runs' own (HTML, escaped).
struct ReportSection {
  std::string title;
  std::string html;
  std::string id;  // the section's anchor, when it has one
};

// Figures about the runs together (a comparison's slowdowns) and sentences (its verdict,
// its attribution's headline), stored in result.json. The page shows `story` at the top
// when given (a comparison: the bug's lesson, the slowdown, why slower), else the figures
// and sentences as they are; `links` say where the page belongs (the lab's index, the
// attribution page).
struct ReportSummary {
  std::vector<HeadlineFigure> figures;
  std::vector<std::string> sentences;
  std::vector<ReportSection> story;
  std::vector<PageLink> links;
};

// The roofs come from the first run's device spec; runs may be one (a run) or two (fixed vs buggy).
std::string roofline_svg(const std::vector<LabelledRun>& runs);
// Each decode step as a bar: busy time stacked by op category, idle time on top, syncs marked.
// scale_seconds: the least height of the time axis, so that two runs can share one scale.
std::string step_timeline_svg(const RunAnalysis& analysis, const std::string& label, double scale_seconds = 0);
std::string report_html(const std::vector<LabelledRun>& runs, const std::string& title = "decodelab report",
                        const ReportSummary* summary = nullptr);
void write_report_directory(const std::filesystem::path& directory, const std::vector<LabelledRun>& runs,
                            const std::string& title = "decodelab report", const ReportSummary* summary = nullptr);

// A headline figure as the pages show it: the median as the CLI prints it and its interval,
// with the JSON key and exact median as data attributes (what a test compares with --json);
// `extra` (HTML) goes under the label.
std::string headline_figure_html(const HeadlineFigure& figure, const std::string& css_class = "figure",
                                 const std::string& extra = "");

// Shared by the SVG and HTML printers.
std::string xml_escape(std::string_view text);
const char* category_colour(OpCategory category);
const char* run_colour(size_t run);

}  // namespace decodelab
