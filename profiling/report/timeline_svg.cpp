// The step timeline as SVG: one bar per decode step, its device busy time stacked by op
// category and its idle time on top (hatched), syncs marked above the bar, steps that
// are overhead-bound underlined. Reading it: a tall hatched cap is the host making the
// device wait; a bar that grows step after step is work that grows with position.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "profiling/report/report.h"
#include "profiling/report/svg_labels.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

constexpr double kTimelineWidth = 780, kTimelineHeight = 262;
constexpr double kTimelineLeft = 64, kTimelineRight = kTimelineWidth - 16, kTimelineTop = 34, kTimelineBottom = kTimelineHeight - 80;

std::string timeline_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  return buffer;
}

// 1, 2 or 5 × 10^k, so that about `count` ticks cover `high`.
double nice_step(double high, int count) {
  const double raw = high / count;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (factor * decade >= raw) return factor * decade;
  }
  return 10 * decade;
}

}  // namespace

std::string step_timeline_svg(const RunAnalysis& analysis, const std::string& label, double scale_seconds) {
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << kTimelineWidth << " " << kTimelineHeight << "\" width=\"" << kTimelineWidth
      << "\" height=\"" << kTimelineHeight << "\" font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\" font-size=\"11\">\n";
  svg << "<defs><pattern id=\"idle-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
         "<rect width=\"6\" height=\"6\" fill=\"#f3f4f6\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#9ca3af\" "
         "stroke-width=\"2\"/></pattern></defs>\n";
  svg << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  {
    const std::string title = "Decode steps · " + label;
    const FittedText fitted = fit_text(title, kTimelineWidth - 8 - kTimelineLeft, 13, 10, true);
    svg << "<text x=\"" << kTimelineLeft << "\" y=\"20\" font-size=\"" << fitted.font_px << "\" font-weight=\"600\" fill=\"#111827\">";
    if (fitted.cut) svg << "<title>" << xml_escape(title) << "</title>";
    svg << xml_escape(fitted.text) << "</text>\n";
  }
  const std::vector<StepStats>& steps = analysis.steps;
  if (steps.empty()) {
    svg << "<text x=\"" << kTimelineLeft << "\" y=\"" << (kTimelineTop + kTimelineBottom) / 2 << "\" fill=\"#6b7280\">no decode steps in this run</text>\n";
    return svg.str() + "</svg>\n";
  }

  double tallest = scale_seconds;
  for (const StepStats& step : steps) tallest = std::max(tallest, step.timeline.device_seconds());
  if (tallest <= 0) tallest = 1e-3;
  const double tick = nice_step(tallest * 1.05, 4);
  const double top_value = std::ceil(tallest * 1.05 / tick) * tick;
  auto y_of = [&](double seconds) { return kTimelineBottom - seconds / top_value * (kTimelineBottom - kTimelineTop); };

  // Axes and grid.
  svg << "<g stroke=\"#e5e7eb\">\n";
  for (double value = 0; value <= top_value * 1.0001; value += tick) {
    svg << "<line x1=\"" << kTimelineLeft << "\" y1=\"" << timeline_number(y_of(value)) << "\" x2=\"" << kTimelineRight << "\" y2=\"" << timeline_number(y_of(value)) << "\"/>\n";
  }
  svg << "</g>\n<g fill=\"#4b5563\">\n";
  for (double value = 0; value <= top_value * 1.0001; value += tick) {
    svg << "<text x=\"" << kTimelineLeft - 6 << "\" y=\"" << timeline_number(y_of(value) + 4) << "\" text-anchor=\"end\">"
        << xml_escape(format_seconds(value)) << "</text>\n";
  }
  svg << "</g>\n";

  const double slot = (kTimelineRight - kTimelineLeft) / static_cast<double>(steps.size());
  const double bar = std::max(1.0, slot * 0.78);
  const double widest_label = text_width(std::to_string(steps.back().ordinal + 1), 11) + 8;  // step numbers never touch
  const size_t label_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(widest_label / slot)));
  std::array<bool, kOpCategoryCount> used{};
  bool any_sync = false, any_overhead = false;
  for (size_t s = 0; s < steps.size(); ++s) {
    const StepStats& step = steps[s];
    const double x = kTimelineLeft + slot * static_cast<double>(s) + (slot - bar) / 2;
    double stacked = 0;
    svg << "<g><title>decode step " << step.ordinal + 1 << ": busy "
        << xml_escape(format_seconds(step.timeline.busy_seconds)) << ", idle " << xml_escape(format_seconds(step.timeline.idle_seconds))
        << ", " << step.timeline.gaps << " gaps, " << step.timeline.syncs << " syncs, " << step.timeline.ops << " ops</title>";
    for (size_t c = 0; c < kOpCategoryCount; ++c) {
      const double seconds = step.category_seconds[c];
      if (seconds <= 0) continue;
      used[c] = true;
      svg << "<rect x=\"" << timeline_number(x) << "\" y=\"" << timeline_number(y_of(stacked + seconds)) << "\" width=\"" << timeline_number(bar) << "\" height=\""
          << timeline_number(y_of(stacked) - y_of(stacked + seconds)) << "\" fill=\"" << category_colour(static_cast<OpCategory>(c)) << "\"/>";
      stacked += seconds;
    }
    // Busy time not split by category (markers, ops outside the categories) joins the stack unlabelled.
    stacked = std::max(stacked, step.timeline.busy_seconds);
    if (step.timeline.idle_seconds > 0) {
      svg << "<rect x=\"" << timeline_number(x) << "\" y=\"" << timeline_number(y_of(stacked + step.timeline.idle_seconds)) << "\" width=\"" << timeline_number(bar)
          << "\" height=\"" << timeline_number(y_of(stacked) - y_of(stacked + step.timeline.idle_seconds))
          << "\" fill=\"url(#idle-hatch)\" stroke=\"#9ca3af\" stroke-width=\"0.5\"/>";
    }
    if (step.timeline.syncs > 0) {
      any_sync = true;
      const double top = y_of(step.timeline.device_seconds()) - 3;
      svg << "<polygon points=\"" << timeline_number(x + bar / 2) << "," << timeline_number(top) << " " << timeline_number(x + bar / 2 - 4) << "," << timeline_number(top - 7) << " "
          << timeline_number(x + bar / 2 + 4) << "," << timeline_number(top - 7) << "\" fill=\"#111827\"/>";
    }
    if (step.overhead_bound) {
      any_overhead = true;
      svg << "<rect x=\"" << timeline_number(x) << "\" y=\"" << timeline_number(kTimelineBottom + 2) << "\" width=\"" << timeline_number(bar) << "\" height=\"3\" fill=\"#dc2626\"/>";
    }
    svg << "</g>\n";
    if (s % label_every == 0) {
      svg << "<text x=\"" << timeline_number(x + bar / 2) << "\" y=\"" << kTimelineBottom + 17 << "\" text-anchor=\"middle\" fill=\"#4b5563\">"
          << step.ordinal + 1 << "</text>\n";
    }
  }
  svg << "<line x1=\"" << kTimelineLeft << "\" y1=\"" << kTimelineBottom << "\" x2=\"" << kTimelineRight << "\" y2=\"" << kTimelineBottom << "\" stroke=\"#6b7280\"/>\n";

  // Legend: categories present, idle, syncs, overhead-bound marks.
  // Items flow left to right and wrap onto a second line.
  double legend_x = kTimelineLeft;
  double legend_y = kTimelineHeight - 38;
  auto legend_item = [&](const std::string& swatch_at_origin, const std::string& text) {
    const double width = 30 + text_width(text, 11);
    if (legend_x + width > kTimelineRight && legend_x > kTimelineLeft) {
      legend_x = kTimelineLeft;
      legend_y += 17;
    }
    svg << "<g transform=\"translate(" << timeline_number(legend_x) << "," << timeline_number(legend_y) << ")\">" << swatch_at_origin
        << "<text x=\"16\" y=\"9\" fill=\"#374151\">" << xml_escape(text) << "</text></g>\n";
    legend_x += width;
  };
  for (size_t c = 0; c < kOpCategoryCount; ++c) {
    if (!used[c]) continue;
    legend_item(std::string("<rect width=\"11\" height=\"11\" fill=\"") + category_colour(static_cast<OpCategory>(c)) + "\"/>",
                op_category_name(static_cast<OpCategory>(c)));
  }
  legend_item("<rect width=\"11\" height=\"11\" fill=\"url(#idle-hatch)\" stroke=\"#9ca3af\"/>", "device idle");
  if (any_sync) legend_item("<polygon points=\"5.5,11 1,3 10,3\" fill=\"#111827\"/>", "host sync");
  if (any_overhead) legend_item("<rect y=\"4\" width=\"11\" height=\"3\" fill=\"#dc2626\"/>", "overhead-bound step");
  svg << "<text x=\"" << kTimelineLeft - 6 << "\" y=\"" << kTimelineBottom + 17 << "\" text-anchor=\"end\" fill=\"#6b7280\">step</text>\n";
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace decodelab
