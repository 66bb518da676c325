// Reports for people: the roofline SVG (log-log, the device's datasheet and measured
// roofs, one point per op category and phase, one colour per run), the step timeline SVG,
// one self-contained HTML page (no scripts, fonts or fetches), and the report directory:
// report.html, roofline.svg, ops.csv, result.json, each written atomically.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/event_sink.h"
#include "profiling/printers.h"

namespace decodelab {

// Figures about the runs together (a comparison's slowdowns) and sentences (its verdict,
// its attribution's headline), shown at the top of the page and stored in result.json.
struct ReportSummary {
  std::vector<HeadlineFigure> figures;
  std::vector<std::string> sentences;
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

// Shared by the SVG and HTML printers.
std::string xml_escape(std::string_view text);
const char* category_colour(OpCategory category);
const char* run_colour(size_t run);

}  // namespace decodelab
