// The roofline chart as SVG. Axes are log-log, snapped to whole decades around the
// points and the ridge points. With two runs (fixed, buggy), a point the bug moved (its
// intensity, or its rate by more than 2x) gets an arrow from its first-run position to its
// second and a label at both ends, placed first;
// labels never overlap (profiling/report/svg_labels.h), and one with no room is listed under the
// chart. Non-obvious choice: ops with no FLOPs (copies, casts, gathers) have no place on a
// FLOP/s axis, so they are listed under the chart with their share of the bandwidth roof
// instead of being drawn at a made-up height.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "profiling/report/report.h"
#include "profiling/report/svg_labels.h"
#include "profiling/units.h"

namespace decodelab {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

const char* category_colour(OpCategory category) {
  switch (category) {
    case OpCategory::Matmul: return "#2563eb";
    case OpCategory::Attention: return "#7c3aed";
    case OpCategory::Norm: return "#059669";
    case OpCategory::Rope: return "#0891b2";
    case OpCategory::Activation: return "#65a30d";
    case OpCategory::Elementwise: return "#ca8a04";
    case OpCategory::Copy: return "#ea580c";
    case OpCategory::Cast: return "#db2777";
    case OpCategory::Embedding: return "#0d9488";
    case OpCategory::Sampling: return "#4f46e5";
    case OpCategory::Memcpy: return "#b91c1c";
    case OpCategory::Marker: return "#6b7280";
    case OpCategory::Other: return "#9ca3af";
  }
  return "#9ca3af";
}

const char* run_colour(size_t run) {
  static const char* const colours[] = {"#1d4ed8", "#dc2626", "#059669", "#9333ea"};
  return colours[run % 4];
}

namespace {

constexpr double kWidth = 780, kPlotHeight = 470;
constexpr double kLeft = 100, kRight = kWidth - 28, kTop = 40, kBottom = kPlotHeight - 56;

std::string num(double value) { return svg_number(value); }

// Decade tick labels: 0.01, 0.1, 1, 10, 100, 1k, 10k.
std::string decade_label(double value) {
  if (value >= 1000) return format_number(value / 1000, 1) + "k";
  return format_number(value, 1);
}

struct LogAxis {
  double low_decade, high_decade;  // log10 of the ends
  double from, to;                 // pixels
  double at(double value) const {
    return from + (std::log10(value) - low_decade) / (high_decade - low_decade) * (to - from);
  }
  double min() const { return std::pow(10.0, low_decade); }
  double max() const { return std::pow(10.0, high_decade); }
};

struct RoofLine {
  const Roofs* roofs;
  Precision precision;
  bool measured;
};

std::vector<Precision> split_precisions(const std::string& label) {
  std::vector<Precision> result;
  std::stringstream stream(label);
  std::string part;
  while (std::getline(stream, part, '+')) {
    if (auto precision = parse_precision(part)) result.push_back(*precision);
  }
  return result;
}

// The first run's points are filled; later runs are rings, so a point that did not move
// between runs shows as a dot inside a ring.
void point_marker(std::ostringstream& svg, Phase phase, double x, double y, const char* colour, bool filled) {
  const std::string style = filled ? "fill=\"" + std::string(colour) + "\" fill-opacity=\"0.9\" stroke=\"#fff\" stroke-width=\"1\""
                                   : "fill=\"none\" stroke=\"" + std::string(colour) + "\" stroke-width=\"2\"";
  const double size = filled ? 5.5 : 8;
  switch (phase) {
    case Phase::Decode:
      svg << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"" << num(size) << "\" " << style << "/>";
      break;
    case Phase::Prefill:
      svg << "<rect x=\"" << num(x - size) << "\" y=\"" << num(y - size) << "\" width=\"" << num(2 * size) << "\" height=\""
          << num(2 * size) << "\" " << style << "/>";
      break;
    case Phase::Other:
      svg << "<polygon points=\"" << num(x) << "," << num(y - size - 1) << " " << num(x + size + 1) << "," << num(y) << " "
          << num(x) << "," << num(y + size + 1) << " " << num(x - size - 1) << "," << num(y) << "\" " << style << "/>";
      break;
  }
}

std::string group_name(const OpGroup& group) {
  return std::string(op_category_name(group.category)) + (group.phase == Phase::Decode ? "" : std::string(" (") + phase_name(group.phase) + ")");
}

// --- the frame: which roofs, and axes snapped to whole decades around them and the points ---

struct Frame {
  std::vector<RoofLine> lines;  // one per roof set and distinct compute peak
  LogAxis x, y;
};

Frame chart_frame(const std::vector<LabelledRun>& runs, const DeviceSpec& spec) {
  // Which roofs: fp32 plus every precision the points were held to, datasheet and measured.
  std::set<Precision> precisions = {Precision::Fp32};
  double low_intensity = 0.1, high_intensity = 10, low_flops = INFINITY, high_achieved = 0;
  for (const LabelledRun& run : runs) {
    for (const OpGroup& group : run.analysis->categories) {
      for (Precision precision : split_precisions(group.precision)) precisions.insert(precision);
      if (group.point.flops <= 0 || group.point.bytes <= 0 || group.point.seconds <= 0) continue;
      low_intensity = std::min(low_intensity, group.point.intensity());
      high_intensity = std::max(high_intensity, group.point.intensity());
      low_flops = std::min(low_flops, group.point.achieved_flops());
      high_achieved = std::max(high_achieved, group.point.achieved_flops());
    }
  }
  std::vector<RoofLine> lines;
  double high_flops = 0;
  for (const auto& [roofs, measured] : {std::pair{&spec.datasheet, false}, std::pair{&spec.measured, true}}) {
    if (!*roofs || (*roofs)->bandwidth <= 0) continue;
    std::set<double> drawn_peaks;  // fp16 and bf16 often share one roof: draw it once
    for (Precision precision : precisions) {
      const double peak = (*roofs)->flops(precision);
      if (peak <= 0 || !drawn_peaks.insert(peak).second) continue;
      lines.push_back({&**roofs, precision, measured});
      high_flops = std::max(high_flops, peak);
      high_intensity = std::max(high_intensity, peak / (*roofs)->bandwidth * 4);
    }
  }
  if (high_flops <= 0) high_flops = 1e12;
  high_flops = std::max(high_flops, high_achieved);  // a point above its roof stays on the chart
  if (!std::isfinite(low_flops)) low_flops = high_flops / 1e4;
  const LogAxis x{std::floor(std::log10(low_intensity / 1.5)), std::ceil(std::log10(high_intensity * 1.5)), kLeft, kRight};
  double y_low = std::floor(std::log10(low_flops / 2));
  for (const RoofLine& line : lines) y_low = std::min(y_low, std::floor(std::log10(line.roofs->bandwidth * x.min())));
  y_low = std::max(y_low, std::ceil(std::log10(high_flops * 1.5)) - 7);  // at most 7 decades tall
  const LogAxis y{y_low, std::ceil(std::log10(high_flops * 1.5)), kBottom, kTop};
  return {std::move(lines), x, y};
}

// Title, grid, ticks, the plot's border and the axis titles.
void draw_axes(std::ostringstream& svg, const DeviceSpec& spec, const LogAxis& x, const LogAxis& y) {
  {  // a long device description (threads, ISA, weight stream) must not run off the chart
    const std::string title = "Roofline · " + (spec.description.empty() ? spec.name : spec.description);
    const FittedText fitted = fit_text(title, kWidth - 12 - kLeft, 15, 11, true);
    svg << "<text x=\"" << kLeft << "\" y=\"22\" font-size=\"" << num(fitted.font_px) << "\" font-weight=\"600\" fill=\"#111827\">";
    if (fitted.cut) svg << "<title>" << xml_escape(title) << "</title>";
    svg << xml_escape(fitted.text) << "</text>\n";
  }
  svg << "<g stroke=\"#e5e7eb\" stroke-width=\"1\">\n";
  for (double decade = x.low_decade; decade <= x.high_decade; ++decade) {
    const double px = x.at(std::pow(10, decade));
    svg << "<line x1=\"" << num(px) << "\" y1=\"" << kTop << "\" x2=\"" << num(px) << "\" y2=\"" << kBottom << "\"/>\n";
  }
  for (double decade = y.low_decade; decade <= y.high_decade; ++decade) {
    const double py = y.at(std::pow(10, decade));
    svg << "<line x1=\"" << kLeft << "\" y1=\"" << num(py) << "\" x2=\"" << kRight << "\" y2=\"" << num(py) << "\"/>\n";
  }
  svg << "</g>\n<g fill=\"#4b5563\" font-size=\"11\">\n";
  for (double decade = x.low_decade; decade <= x.high_decade; ++decade) {
    svg << "<text x=\"" << num(x.at(std::pow(10, decade))) << "\" y=\"" << kBottom + 16 << "\" text-anchor=\"middle\">"
        << decade_label(std::pow(10, decade)) << "</text>\n";
  }
  for (double decade = y.low_decade; decade <= y.high_decade; ++decade) {
    svg << "<text x=\"" << kLeft - 6 << "\" y=\"" << num(y.at(std::pow(10, decade)) + 4) << "\" text-anchor=\"end\">"
        << xml_escape(format_flop_rate(std::pow(10, decade))) << "</text>\n";
  }
  svg << "</g>\n";
  svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kRight - kLeft << "\" height=\"" << kBottom - kTop
      << "\" fill=\"none\" stroke=\"#9ca3af\"/>\n";
  svg << "<text x=\"" << (kLeft + kRight) / 2 << "\" y=\"" << kPlotHeight - 18
      << "\" text-anchor=\"middle\" fill=\"#374151\">arithmetic intensity (FLOP per DRAM byte)</text>\n";
  svg << "<text transform=\"translate(16," << (kTop + kBottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\" fill=\"#374151\">achieved FLOP/s</text>\n";
}

// --- the points: where each op group sits, and which ones the bug moved ---

struct PlottedPoint {
  size_t run;
  const OpGroup* group;
  const AboveRoof* above;  // a point above its roof, and why; else null
  Phase phase;
  OpCategory category;
  double px, py;
  std::string name;
};

struct Points {
  std::vector<PlottedPoint> plotted;
  std::map<std::string, std::string> data_movement;       // "copy (prefill)" -> per-run figures
  std::map<std::string, std::string> data_movement_text;  // the same without markup, for widths
};

// Ops with FLOPs are plotted; those without (copies, casts) are kept, per group, as the
// bandwidth and roof share each run achieved, for the list under the chart.
Points plot_points(const std::vector<LabelledRun>& runs, const LogAxis& x, const LogAxis& y) {
  Points points;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (const OpGroup& group : runs[r].analysis->categories) {
      const RooflinePoint& point = group.point;
      if (point.seconds <= 0) continue;
      if (point.flops <= 0 || point.bytes <= 0) {
        if (point.bytes <= 0) continue;
        const std::string figures = runs[r].label + " " + format_bandwidth(point.achieved_bandwidth()) + " (" +
                                    format_percent(point.memory_fraction()) + ")";
        std::string& entry = points.data_movement[group_name(group)];
        std::string& text = points.data_movement_text[group_name(group)];
        entry += std::string(entry.empty() ? "" : " · ") + "<tspan fill=\"" + run_colour(r) + "\">" + xml_escape(figures) + "</tspan>";
        text += (text.empty() ? "" : " · ") + figures;
        continue;
      }
      const double px = x.at(std::clamp(point.intensity(), x.min(), x.max()));
      const double py = y.at(std::clamp(point.achieved_flops(), y.min(), y.max()));
      const auto& above_list = runs[r].analysis->above_roof;
      const auto above = std::find_if(above_list.begin(), above_list.end(), [&](const AboveRoof& entry) {
        return entry.phase == group.phase && entry.category == group.category;
      });
      const AboveRoof* above_roof = above == above_list.end() ? nullptr : &*above;
      std::string name = group_name(group);
      if (above_roof) name += above_roof->cache_resident ? " (in cache)" : " (roof suspect)";
      points.plotted.push_back({r, &group, above_roof, group.phase, group.category, px, py, name});
    }
  }
  return points;
}

struct Move {
  const PlottedPoint* from;
  const PlottedPoint* to;
};

struct Moves {
  std::vector<Move> moved;
  std::set<const PlottedPoint*> paired;  // the second of a pair that did not move: one label for both
};

// With two runs, the same phase and category in both, drawn apart: those get an arrow from
// the first run's point to the second's and a label each, placed before any other label.
Moves find_moves(const std::vector<LabelledRun>& runs, const std::vector<PlottedPoint>& plotted) {
  Moves moves;
  if (runs.size() != 2) return moves;
  for (const PlottedPoint& first : plotted) {
    if (first.run != 0) continue;
    for (const PlottedPoint& second : plotted) {
      if (second.run != 1 || second.phase != first.phase || second.category != first.category) continue;
      // Moved: its intensity changed (the bug changed the work or the bytes), or its rate
      // by more than a factor of 2 — timing noise alone moves a point up and down a little.
      const double rate_ratio = second.group->point.achieved_flops() / first.group->point.achieved_flops();
      if (std::fabs(second.px - first.px) > 6 || std::fabs(std::log10(rate_ratio)) > std::log10(2.0)) {
        moves.moved.push_back({&first, &second});
      } else {
        moves.paired.insert(&second);
      }
    }
  }
  return moves;
}

// --- what is drawn over the plot, in order, each keeping off what came before ---

// Legend (top left, under the slope): runs, phase shapes, roof styles, the arrows.
void draw_legend(std::ostringstream& svg, const std::vector<LabelledRun>& runs, const DeviceSpec& spec, bool any_moved,
                 LabelPlacer& labels) {
  double legend_y = kTop + 18;
  double legend_width = 0;
  svg << "<g font-size=\"11\" fill=\"#374151\">\n";
  auto legend_line = [&](double left, const std::string& text) {
    svg << "<text x=\"" << num(left) << "\" y=\"" << num(legend_y) << "\">" << xml_escape(text) << "</text>\n";
    legend_width = std::max(legend_width, left - kLeft + text_width(text, 11));
    legend_y += 16;
  };
  for (size_t r = 0; r < runs.size(); ++r) {
    point_marker(svg, Phase::Decode, kLeft + 16, legend_y - 4, run_colour(r), r == 0);
    legend_line(kLeft + 30, runs[r].label);
  }
  legend_line(kLeft + 10, "● decode  ■ prefill  ◆ other");
  if (spec.datasheet && spec.measured) legend_line(kLeft + 10, "solid: datasheet · dashed: measured");
  if (any_moved) {
    svg << "<line x1=\"" << kLeft + 10 << "\" y1=\"" << num(legend_y - 4) << "\" x2=\"" << kLeft + 34 << "\" y2=\""
        << num(legend_y - 4) << "\" stroke=\"#374151\" stroke-width=\"1.4\" marker-end=\"url(#moved-arrow)\"/>\n";
    legend_line(kLeft + 40, "moved by the bug: " + runs[0].label + " → " + runs[1].label);
  }
  svg << "</g>\n";
  labels.block(LabelBox{kLeft, kTop, kLeft + legend_width + 8, legend_y - 8});
}

// The compute ceilings' labels sit at the right edge, pushed apart when two ceilings are close.
void draw_ceiling_labels(std::ostringstream& svg, const std::vector<RoofLine>& lines, const LogAxis& y,
                         LabelPlacer& labels) {
  std::vector<std::pair<double, std::string>> ceiling_labels;
  for (const RoofLine& line : lines) {
    const double peak = line.roofs->flops(line.precision);
    ceiling_labels.push_back({y.at(peak) - 5, std::string(precision_name(line.precision)) + " " + format_flop_rate(peak) +
                                                  " (" + (line.measured ? "measured" : "datasheet") + ")"});
  }
  std::sort(ceiling_labels.begin(), ceiling_labels.end());
  for (size_t i = 1; i < ceiling_labels.size(); ++i) {
    ceiling_labels[i].first = std::max(ceiling_labels[i].first, ceiling_labels[i - 1].first + 14);
  }
  for (const auto& [baseline, text] : ceiling_labels) {
    svg << "<text class=\"halo\" x=\"" << kRight - 6 << "\" y=\"" << num(baseline)
        << "\" text-anchor=\"end\" font-size=\"11\" fill=\"#374151\">"
        << xml_escape(text) << "</text>\n";
    labels.block(text_box(kRight - 6 - text_width(text, 11), baseline, text, 11));
  }
}

// A bandwidth slope's label, along the slope (log scale) where it hits no other label, else
// at its middle; the measured one under its line, the datasheet's above.
void draw_slope_label(std::ostringstream& svg, const RoofLine& line, double start, double corner, bool dashed,
                      const LogAxis& x, const LogAxis& y, LabelPlacer& labels) {
  const double bandwidth = line.roofs->bandwidth;
  const double angle =
      std::atan2(y.at(bandwidth * corner) - y.at(bandwidth * start), x.at(corner) - x.at(start)) * 180 / M_PI;
  const double offset = dashed ? 14 : -6;
  const std::string text = format_bandwidth(bandwidth) + " (" + (line.measured ? "measured" : "datasheet") + ")";
  const double width = text_width(text, 11), radians = angle * M_PI / 180;
  const double half_x = (std::fabs(width * std::cos(radians)) + std::fabs(12 * std::sin(radians))) / 2;
  const double half_y = (std::fabs(width * std::sin(radians)) + std::fabs(12 * std::cos(radians))) / 2;
  double center_x = 0, center_y = 0;
  LabelBox box{};
  for (const double along : {0.5, 0.3, 0.7, 0.2, 0.8, 0.5}) {  // fraction of the slope; the last: the middle
    const double label_x = start * std::pow(std::max(corner, start * 1.01) / start, along);
    center_x = x.at(label_x);
    center_y = y.at(bandwidth * label_x) + offset;
    box = LabelBox{center_x - half_x, center_y - half_y - 4, center_x + half_x, center_y + half_y - 4};
    if (labels.is_free(box)) break;
  }
  svg << "<text class=\"halo\" transform=\"translate(" << num(center_x) << "," << num(center_y) << ") rotate(" << num(angle)
      << ")\" text-anchor=\"middle\" font-size=\"11\" fill=\"#374151\">" << xml_escape(text) << "</text>\n";
  labels.block(box);  // point labels keep off the rotated text's bounding box
}

// Roofs: bandwidth slope up to the ridge, then the compute ceiling; one slope label per
// roof set (on its fp32 line).
void draw_roofs(std::ostringstream& svg, const Frame& frame, const DeviceSpec& spec, LabelPlacer& labels) {
  const LogAxis& x = frame.x;
  const LogAxis& y = frame.y;
  draw_ceiling_labels(svg, frame.lines, y, labels);
  for (const RoofLine& line : frame.lines) {
    const double bandwidth = line.roofs->bandwidth;
    const double peak = line.roofs->flops(line.precision);
    const double start = std::max(x.min(), y.min() / bandwidth);
    const double corner = std::clamp(peak / bandwidth, start, x.max());
    const bool dashed = line.measured && spec.datasheet.has_value();
    svg << "<polyline fill=\"none\" stroke=\"#374151\" stroke-width=\"1.8\"" << (dashed ? " stroke-dasharray=\"6 4\"" : "")
        << " points=\"" << num(x.at(start)) << "," << num(y.at(bandwidth * start)) << " " << num(x.at(corner)) << ","
        << num(y.at(std::min(peak, bandwidth * corner))) << " " << num(x.at(x.max())) << "," << num(y.at(peak)) << "\"/>\n";
    if (line.precision == Precision::Fp32) draw_slope_label(svg, line, start, corner, dashed, x, y, labels);
  }
}

// Points: one per op category and phase, per run, after the arrows of the moved ones. A
// point above its roof is never drawn there unexplained: a dashed ring, the reason in its
// tooltip (analysis.h, AboveRoof).
void draw_points(std::ostringstream& svg, const std::vector<LabelledRun>& runs, const std::vector<PlottedPoint>& plotted,
                 const std::vector<Move>& moved) {
  for (const Move& move : moved) {
    const double dx = move.to->px - move.from->px, dy = move.to->py - move.from->py;
    const double length = std::hypot(dx, dy);
    const double from_gap = 7 / length, to_gap = 11 / length;  // clear of the markers
    if (from_gap + to_gap >= 1) continue;
    svg << "<line x1=\"" << num(move.from->px + dx * from_gap) << "\" y1=\"" << num(move.from->py + dy * from_gap)
        << "\" x2=\"" << num(move.to->px - dx * to_gap) << "\" y2=\"" << num(move.to->py - dy * to_gap)
        << "\" stroke=\"#374151\" stroke-width=\"1.4\" marker-end=\"url(#moved-arrow)\"/>\n";
  }
  for (const PlottedPoint& plotted_point : plotted) {
    const size_t r = plotted_point.run;
    const OpGroup& group = *plotted_point.group;
    const RooflinePoint& point = group.point;
    svg << "<g><title>" << xml_escape(runs[r].label + " · " + phase_name(group.phase) + " · " + op_category_name(group.category))
        << ": " << xml_escape(format_flop_rate(point.achieved_flops())) << " at " << format_number(point.intensity(), 2)
        << " FLOP/B, " << xml_escape(format_percent(point.roof_fraction())) << " of roof, "
        << xml_escape(limiter_cell(group.limiter, group.near))
        << (plotted_point.above ? "; " + xml_escape(plotted_point.above->explanation) : "") << "</title>";
    point_marker(svg, group.phase, plotted_point.px, plotted_point.py, run_colour(r), r == 0);
    if (plotted_point.above) {
      svg << "<circle cx=\"" << num(plotted_point.px) << "\" cy=\"" << num(plotted_point.py)
          << "\" r=\"11\" fill=\"none\" stroke=\"#d97706\" stroke-width=\"1.5\" stroke-dasharray=\"3 2\"/>";
    }
    svg << "</g>\n";
  }
}

// The points' labels: the moved points first (each named with its run), then the rest (a
// point that sits where its twin does is labelled once). Returns the labels with no free
// spot (text, colour), for the list under the chart.
std::vector<std::pair<std::string, const char*>> draw_point_labels(std::ostringstream& svg,
                                                                   const std::vector<LabelledRun>& runs,
                                                                   const std::vector<PlottedPoint>& plotted,
                                                                   const Moves& moves, LabelPlacer& labels) {
  struct Label {
    const PlottedPoint* point;
    std::string text;
  };
  std::vector<Label> queue;
  std::set<const PlottedPoint*> moved;
  for (const Move& move : moves.moved) {
    queue.push_back({move.to, move.to->name + " (" + runs[1].label + ")"});
    queue.push_back({move.from, move.from->name + " (" + runs[0].label + ")"});
    moved.insert(move.from);
    moved.insert(move.to);
  }
  for (const PlottedPoint& point : plotted) {
    if (moved.count(&point) || moves.paired.count(&point)) continue;
    const bool alone = runs.size() > 1 && std::none_of(plotted.begin(), plotted.end(), [&](const PlottedPoint& other) {
      return other.run != point.run && other.phase == point.phase && other.category == point.category;
    });
    queue.push_back({&point, point.name + (alone ? " (" + runs[point.run].label + ")" : "")});
  }
  std::vector<std::pair<std::string, const char*>> unplaced;
  for (const Label& label : queue) {
    const char* colour = run_colour(label.point->run);
    if (const auto origin = labels.place(label.point->px, label.point->py, label.text)) {
      svg << "<text class=\"halo\" x=\"" << num(origin->first) << "\" y=\"" << num(origin->second)
          << "\" font-size=\"11\" fill=\"" << colour << "\">" << xml_escape(label.text) << "</text>\n";
    } else {
      unplaced.emplace_back(label.text, colour);
    }
  }
  return unplaced;
}

// Under the chart: the points whose labels found no room, then data movement (no FLOPs:
// bandwidth and % of the bandwidth roof). Returns the chart's height below them.
double draw_lists_under_chart(std::ostringstream& svg, const std::vector<std::pair<std::string, const char*>>& unplaced,
                              const Points& points) {
  double height = kPlotHeight;
  const double line_width = kWidth - kLeft - 20;
  if (!unplaced.empty()) {
    std::vector<SvgListItem> items;
    for (const auto& [text, colour] : unplaced) {
      items.push_back({text, "<tspan fill=\"" + std::string(colour) + "\">" + xml_escape(text) + "</tspan>"});
    }
    height = svg_wrapped_list(svg, kLeft, height, line_width,
                              xml_escape("points not labelled on the chart (no room):"), items);
  }
  if (!points.data_movement.empty()) {
    std::vector<SvgListItem> items;
    for (const auto& [name, figures] : points.data_movement) {
      items.push_back({name + ": " + points.data_movement_text.at(name), xml_escape(name) + ": " + figures});
    }
    height = svg_wrapped_list(svg, kLeft, height, line_width,
                              xml_escape("no FLOPs, so not on the chart — achieved bandwidth (% of the bandwidth roof):"),
                              items);
  }
  return height;
}

// The document around what was drawn: its size, the labels' halo, the arrowhead, a white ground.
std::string svg_document(double height, const std::string& font, const std::string& body) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) + "\" width=\"" +
         num(kWidth) + "\" height=\"" + num(height) + "\" " + font + ">\n<style>.halo { paint-order: stroke; stroke: #ffffff; stroke-width: 3px; stroke-linejoin: round; }</style>\n"
         "<defs><marker id=\"moved-arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
         "orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#374151\"/></marker></defs>\n"
         "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n" +
         body + "</svg>\n";
}

}  // namespace

std::string roofline_svg(const std::vector<LabelledRun>& runs) {
  const std::string font = "font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\" font-size=\"12\"";
  if (runs.empty() || !runs.front().analysis) {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 780 60\" width=\"780\" height=\"60\" " + font +
           "><text x=\"20\" y=\"30\">no runs</text></svg>\n";
  }
  const DeviceSpec& spec = runs.front().analysis->device_spec;
  const Frame frame = chart_frame(runs, spec);
  const Points points = plot_points(runs, frame.x, frame.y);
  const Moves moves = find_moves(runs, points.plotted);

  std::ostringstream svg;
  draw_axes(svg, spec, frame.x, frame.y);
  // Every label, the legend's and the roofs' included, keeps off the points' markers.
  LabelPlacer labels(LabelBox{kLeft + 2, kTop + 2, kRight - 2, kBottom - 2});
  for (const PlottedPoint& point : points.plotted) {
    labels.block(LabelBox{point.px - 8, point.py - 8, point.px + 8, point.py + 8});
  }
  draw_legend(svg, runs, spec, !moves.moved.empty(), labels);
  draw_roofs(svg, frame, spec, labels);
  draw_points(svg, runs, points.plotted, moves.moved);
  const auto unplaced = draw_point_labels(svg, runs, points.plotted, moves, labels);
  const double height = draw_lists_under_chart(svg, unplaced, points);
  return svg_document(height, font, svg.str());
}

}  // namespace decodelab
