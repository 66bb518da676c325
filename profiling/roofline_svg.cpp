// The roofline chart as SVG. Axes are log-log, snapped to whole decades around the
// points and the ridge points. Non-obvious choice: ops with no FLOPs (copies, casts,
// gathers) have no place on a FLOP/s axis, so they are listed in a box with their share
// of the bandwidth roof instead of being drawn at a made-up height.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "profiling/report.h"
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
constexpr double kCharWidth = 6.3;  // 11 px system-ui, for label boxes

std::string num(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

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

struct Box {
  double left, top, right, bottom;
  bool overlaps(const Box& other) const {
    return left < other.right && other.left < right && top < other.bottom && other.top < bottom;
  }
};

// Greedy label placement: the first candidate spot that hits no placed box wins.
class LabelPlacer {
 public:
  void block(const Box& box) { placed_.push_back(box); }
  // Returns the text's baseline origin, or nothing when every spot is taken.
  std::optional<std::pair<double, double>> place(double x, double y, const std::string& text) {
    const double width = kCharWidth * static_cast<double>(text.size()), height = 12;
    const std::pair<double, double> spots[] = {{x + 9, y + 4}, {x - 9 - width, y + 4}, {x - width / 2, y - 9},
                                               {x - width / 2, y + 17}, {x + 9, y - 8}, {x + 9, y + 16}};
    for (const auto& [left, baseline] : spots) {
      const Box box{left, baseline - height + 2, left + width, baseline + 2};
      if (box.left < kLeft || box.right > kRight || box.top < kTop || box.bottom > kBottom) continue;
      if (std::any_of(placed_.begin(), placed_.end(), [&](const Box& other) { return box.overlaps(other); })) continue;
      placed_.push_back(box);
      return std::pair{left, baseline};
    }
    return std::nullopt;
  }

 private:
  std::vector<Box> placed_;
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

}  // namespace

std::string roofline_svg(const std::vector<LabelledRun>& runs) {
  std::ostringstream svg;
  std::vector<std::string> no_flop_lines;
  const std::string font = "font-family=\"system-ui, -apple-system, 'Segoe UI', sans-serif\" font-size=\"12\"";
  if (runs.empty() || !runs.front().analysis) {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 780 60\" width=\"780\" height=\"60\" " + font +
           "><text x=\"20\" y=\"30\">no runs</text></svg>\n";
  }
  const DeviceSpec& spec = runs.front().analysis->device_spec;

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
  LabelPlacer labels;

  // Title, grid, ticks.
  svg << "<text x=\"" << kLeft << "\" y=\"22\" font-size=\"15\" font-weight=\"600\" fill=\"#111827\">Roofline · "
      << xml_escape(spec.description.empty() ? spec.name : spec.description) << "</text>\n";
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

  // Legend (top left, under the slope): runs, phase shapes, roof styles.
  double legend_y = kTop + 18;
  svg << "<g font-size=\"11\" fill=\"#374151\">\n";
  for (size_t r = 0; r < runs.size(); ++r) {
    point_marker(svg, Phase::Decode, kLeft + 16, legend_y - 4, run_colour(r), r == 0);
    svg << "<text x=\"" << kLeft + 30 << "\" y=\"" << num(legend_y) << "\">" << xml_escape(runs[r].label) << "</text>\n";
    legend_y += 17;
  }
  svg << "<text x=\"" << kLeft + 10 << "\" y=\"" << num(legend_y) << "\">● decode  ■ prefill  ◆ other</text>\n";
  legend_y += 16;
  if (spec.datasheet && spec.measured) {
    svg << "<text x=\"" << kLeft + 10 << "\" y=\"" << num(legend_y) << "\">solid: datasheet · dashed: measured</text>\n";
    legend_y += 16;
  }
  svg << "</g>\n";
  labels.block(Box{kLeft, kTop, kLeft + 230, legend_y - 8});

  // Roofs: bandwidth slope up to the ridge, then the compute ceiling. Ceiling labels sit
  // at the right edge, pushed apart when two ceilings are close.
  std::vector<std::pair<double, std::string>> ceiling_labels;
  for (const RoofLine& line : lines) {
    const double bandwidth = line.roofs->bandwidth;
    const double peak = line.roofs->flops(line.precision);
    const double start = std::max(x.min(), y.min() / bandwidth);
    const double corner = std::clamp(peak / bandwidth, start, x.max());
    const bool dashed = line.measured && spec.datasheet.has_value();
    svg << "<polyline fill=\"none\" stroke=\"#374151\" stroke-width=\"1.8\"" << (dashed ? " stroke-dasharray=\"6 4\"" : "")
        << " points=\"" << num(x.at(start)) << "," << num(y.at(bandwidth * start)) << " " << num(x.at(corner)) << ","
        << num(y.at(std::min(peak, bandwidth * corner))) << " " << num(x.at(x.max())) << "," << num(y.at(peak)) << "\"/>\n";
    const std::string origin = line.measured ? "measured" : "datasheet";
    ceiling_labels.push_back({y.at(peak) - 5, std::string(precision_name(line.precision)) + " " + format_flop_rate(peak) + " (" + origin + ")"});
    if (line.precision == Precision::Fp32) {  // one slope label per roof set
      const double label_x = std::sqrt(start * std::max(corner, start * 1.01));
      const double angle =
          std::atan2(y.at(bandwidth * corner) - y.at(bandwidth * start), x.at(corner) - x.at(start)) * 180 / M_PI;
      const double offset = dashed ? 14 : -6;  // measured slope label under its line, datasheet above
      const std::string text = format_bandwidth(bandwidth) + " (" + origin + ")";
      const double center_x = x.at(label_x), center_y = y.at(bandwidth * label_x) + offset;
      svg << "<text class=\"halo\" transform=\"translate(" << num(center_x) << "," << num(center_y) << ") rotate(" << num(angle)
          << ")\" text-anchor=\"middle\" font-size=\"11\" fill=\"#374151\">" << xml_escape(text) << "</text>\n";
      // Keep point labels off the rotated text: block its bounding box.
      const double width = kCharWidth * static_cast<double>(text.size()), radians = angle * M_PI / 180;
      const double half_x = (std::fabs(width * std::cos(radians)) + std::fabs(12 * std::sin(radians))) / 2;
      const double half_y = (std::fabs(width * std::sin(radians)) + std::fabs(12 * std::cos(radians))) / 2;
      labels.block(Box{center_x - half_x, center_y - half_y - 4, center_x + half_x, center_y + half_y - 4});
    }
  }
  std::sort(ceiling_labels.begin(), ceiling_labels.end());
  for (size_t i = 1; i < ceiling_labels.size(); ++i) {
    ceiling_labels[i].first = std::max(ceiling_labels[i].first, ceiling_labels[i - 1].first + 13);
  }
  for (const auto& [baseline, text] : ceiling_labels) {
    svg << "<text class=\"halo\" x=\"" << kRight - 6 << "\" y=\"" << num(baseline)
        << "\" text-anchor=\"end\" font-size=\"11\" fill=\"#374151\">"
        << xml_escape(text) << "</text>\n";
    const double width = kCharWidth * static_cast<double>(text.size());
    labels.block(Box{kRight - 6 - width, baseline - 10, kRight, baseline + 2});
  }

  // Points: one per op category and phase, per run; labels where they fit.
  struct PlacedPoint {
    double px, py;
    std::string name;
    const char* colour;
  };
  std::vector<PlacedPoint> points;
  std::map<std::string, std::string> data_movement;  // "copy (prefill)" -> per-run figures
  for (size_t r = 0; r < runs.size(); ++r) {
    const char* colour = run_colour(r);
    for (const OpGroup& group : runs[r].analysis->categories) {
      const RooflinePoint& point = group.point;
      if (point.seconds <= 0) continue;
      if (point.flops <= 0 || point.bytes <= 0) {
        if (point.bytes <= 0) continue;
        std::string& entry = data_movement[group_name(group)];
        entry += std::string(entry.empty() ? "" : " · ") + "<tspan fill=\"" + colour + "\">" + xml_escape(runs[r].label) + " " +
                 xml_escape(format_bandwidth(point.achieved_bandwidth())) + " (" + xml_escape(format_percent(point.memory_fraction())) + ")</tspan>";
        continue;
      }
      const double px = x.at(std::clamp(point.intensity(), x.min(), x.max()));
      const double py = y.at(std::clamp(point.achieved_flops(), y.min(), y.max()));
      // A point above its roof is never drawn there unexplained: a dashed ring, the reason
      // in its label and tooltip (analysis.h, AboveRoof).
      const auto& above_list = runs[r].analysis->above_roof;
      const auto above = std::find_if(above_list.begin(), above_list.end(), [&](const AboveRoof& entry) {
        return entry.phase == group.phase && entry.category == group.category;
      });
      const bool is_above = above != above_list.end();
      svg << "<g><title>" << xml_escape(runs[r].label + " · " + phase_name(group.phase) + " · " + op_category_name(group.category))
          << ": " << xml_escape(format_flop_rate(point.achieved_flops())) << " at " << format_number(point.intensity(), 2)
          << " FLOP/B, " << xml_escape(format_percent(point.roof_fraction())) << " of roof, "
          << xml_escape(limiter_cell(group.limiter, group.near)) << (is_above ? "; " + xml_escape(above->explanation) : "")
          << "</title>";
      point_marker(svg, group.phase, px, py, colour, r == 0);
      if (is_above) {
        svg << "<circle cx=\"" << num(px) << "\" cy=\"" << num(py) << "\" r=\"11\" fill=\"none\" stroke=\"#d97706\" "
            << "stroke-width=\"1.5\" stroke-dasharray=\"3 2\"/>";
      }
      svg << "</g>\n";
      labels.block(Box{px - 6, py - 6, px + 6, py + 6});
      std::string name = group_name(group);
      if (is_above) name += above->cache_resident ? " (in cache)" : " (roof suspect)";
      points.push_back({px, py, name, colour});
    }
  }
  std::set<std::pair<std::string, std::pair<int, int>>> labelled;  // one label per name and spot
  for (const PlacedPoint& point : points) {
    const auto spot = std::pair{static_cast<int>(point.px / 8), static_cast<int>(point.py / 8)};
    if (!labelled.insert({point.name, spot}).second) continue;
    if (const auto origin = labels.place(point.px, point.py, point.name)) {
      svg << "<text class=\"halo\" x=\"" << num(origin->first) << "\" y=\"" << num(origin->second) << "\" font-size=\"11\" fill=\""
          << point.colour << "\">" << xml_escape(point.name) << "</text>\n";
    }
  }

  // Data movement (no FLOPs): a list under the chart, bandwidth and % of the bandwidth roof.
  double height = kPlotHeight;
  if (!data_movement.empty()) {
    svg << "<text x=\"" << kLeft << "\" y=\"" << num(height) << "\" font-size=\"11\" fill=\"#374151\">"
        << "<tspan font-weight=\"600\">no FLOPs, so not on the chart</tspan> — achieved bandwidth (% of the bandwidth roof):</text>\n";
    for (const auto& [name, figures] : data_movement) {
      height += 16;
      svg << "<text x=\"" << kLeft + 10 << "\" y=\"" << num(height) << "\" font-size=\"11\" fill=\"#374151\">" << xml_escape(name)
          << ": " << figures << "</text>\n";
    }
    height += 14;
  }
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) + "\" width=\"" +
         num(kWidth) + "\" height=\"" + num(height) + "\" " + font + ">\n<style>.halo { paint-order: stroke; stroke: #ffffff; stroke-width: 3px; stroke-linejoin: round; }</style>\n"
         "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n" +
         svg.str() + "</svg>\n";
}

}  // namespace decodelab
