// The comparison's pages: report.html tells the story top to bottom — the bug's lesson
// (quoted from its bugs/ file), the slowdown with its interval, the verdict and why, the
// prediction beside each measured slowdown, the attribution's signed bars with a sentence
// per part — then the runs' roofline (the points the bug moved, arrows from fixed to buggy),
// timelines and tables; attribution.html holds the split and the prediction on a page of
// their own. Written by `compare --report` and, per bug, by `lab --report` (whose pages
// also link back to the lab's index). Every figure is the comparison's (lab/run/compare.h),
// under the name docs/metrics.md gives it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "lab/run/compare.h"
#include "profiling/report/report.h"

namespace decodelab {

// The two runs as a report shows them (each analysis with its headline figures and the
// machine), and the comparison's own figures (both slowdowns), sentences (the verdict, the
// prediction, why slower) and story sections.
std::vector<LabelledRun> compared_runs(const Comparison& comparison);
ReportSummary comparison_summary(const Comparison& comparison);

// Where a comparison's pages sit: alone (`compare --report`) or in a lab's report, one
// folder below its index.html.
enum class PagePlace { Alone, InLab };

// report.html, attribution.html, roofline.svg, ops.csv and result.json in `directory`.
void write_comparison_report(const std::filesystem::path& directory, const Comparison& comparison,
                             const std::string& title, PagePlace place);

// "in range" -> "in-range", "-" -> "none": a verdict's CSS class.
std::string verdict_class(const std::string& verdict);

}  // namespace decodelab
