// The sweep's page: table and measured-over-predicted chart (see sweep_report.h).
#include "lab/report/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include "engine/base/errors.h"
#include "lab/report/collect_report.h"
#include "lab/predict/predict.h"
#include "lab/report/run_report.h"
#include "profiling/atomic_file.h"
#include "profiling/report/html_page.h"
#include "profiling/report/report.h"
#include "profiling/report/svg_labels.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

constexpr int kIntermediatePoints = 4;  // at most, between two sweep points

std::optional<double> number_of(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

// a .. b stepped geometrically (linearly from 0) at fraction t, rounded to a count.
int between(int a, int b, double t) {
  if (a <= 0 || b <= 0) return static_cast<int>(std::lround(a + (b - a) * t));
  return static_cast<int>(std::lround(a * std::pow(static_cast<double>(b) / a, t)));
}

// Workloads strictly between two points': every count that differs stepped together.
std::vector<Workload> workloads_between(const Workload& a, const Workload& b) {
  std::vector<Workload> result;
  for (int i = 1; i <= kIntermediatePoints; ++i) {
    const double t = static_cast<double>(i) / (kIntermediatePoints + 1);
    Workload w = a;
    w.requests = between(a.requests, b.requests, t);
    w.batch_size = between(a.batch_size, b.batch_size, t);
    if (a.prompt_ids.empty() && b.prompt_ids.empty()) w.prompt_tokens = between(a.prompt_tokens, b.prompt_tokens, t);
    w.new_tokens = between(a.new_tokens, b.new_tokens, t);
    w.host_overhead_us = a.host_overhead_us + (b.host_overhead_us - a.host_overhead_us) * t;
    auto same = [](const Workload& x, const Workload& y) {
      return x.requests == y.requests && x.batch_size == y.batch_size && x.prompt_tokens == y.prompt_tokens &&
             x.new_tokens == y.new_tokens && x.host_overhead_us == y.host_overhead_us;
    };
    if (same(w, a) || same(w, b) || (!result.empty() && same(w, result.back()))) continue;
    result.push_back(w);
  }
  return result;
}

// The intermediate workload's x: the first swept key's value in it.
std::optional<double> x_of(const Workload& w, const std::string& key) {
  if (key == "requests") return w.requests;
  if (key == "batch_size") return w.batch_size;
  if (key == "prompt_tokens") return w.prompt_tokens;
  if (key == "new_tokens") return w.new_tokens;
  if (key == "host_overhead_us") return w.host_overhead_us;
  return std::nullopt;
}

std::optional<CurvePoint> predicted_point(const Scenario& scenario, double x, const DeviceSpec& device) {
  try {
    const ScenarioPrediction prediction = predict_scenario(scenario, device);
    const PhasePrediction* decode = prediction.prediction.phase(Phase::Decode);
    if (!decode || !(prediction.metrics.decode_tokens_per_s > 0)) return std::nullopt;
    return CurvePoint{x, prediction.metrics.decode_tokens_per_s, predicted_bound_name(decode->bound)};
  } catch (const InputError&) {  // an in-between workload the engine refuses, or a device without fixed costs
    return std::nullopt;
  }
}

std::string num(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

const char* const kColours[] = {"#2563eb", "#b3154f", "#2b6a24", "#b45309", "#6d28d9", "#0f766e"};

std::string chart_svg(const std::string& x_key, const std::vector<SweepSeries>& series) {
  constexpr double kLeft = 70, kRight = 740, kTop = 40, kBottom = 330, kWidth = 780, kHeight = 380;
  double x_min = INFINITY, x_max = -INFINITY, y_max = 0;
  for (const SweepSeries& s : series) {
    for (double x : s.measured_x) x_min = std::min(x_min, x), x_max = std::max(x_max, x);
    for (double y : s.measured_tokens_per_s) y_max = std::max(y_max, y);
    for (double y : s.measured_high) y_max = std::max(y_max, y);
    for (const CurvePoint& p : s.predicted) {
      x_min = std::min(x_min, p.x), x_max = std::max(x_max, p.x);
      y_max = std::max(y_max, p.decode_tokens_per_s);
    }
  }
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\" width=\""
      << kWidth << "\" height=\"" << kHeight << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  if (!(x_max >= x_min) || !(y_max > 0)) return svg.str() + "<text x=\"20\" y=\"30\">no numeric points</text></svg>\n";
  const bool log_x = x_min > 0 && x_max / x_min >= 8;
  auto px = [&](double x) {
    if (x_max == x_min) return (kLeft + kRight) / 2;
    const double f = log_x ? std::log(x / x_min) / std::log(x_max / x_min) : (x - x_min) / (x_max - x_min);
    return kLeft + f * (kRight - kLeft);
  };
  y_max *= 1.1;
  auto py = [&](double y) { return kBottom - y / y_max * (kBottom - kTop); };
  svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kRight - kLeft << "\" height=\""
      << kBottom - kTop << "\" fill=\"none\" stroke=\"#9ca3af\"/>\n";
  for (int i = 0; i <= 4; ++i) {  // y ticks
    const double y = y_max * i / 4;
    svg << "<text x=\"" << kLeft - 6 << "\" y=\"" << num(py(y) + 4) << "\" text-anchor=\"end\">" << format_number(y, 3)
        << "</text>\n";
  }
  std::vector<double> ticks;
  for (const SweepSeries& s : series) ticks.insert(ticks.end(), s.measured_x.begin(), s.measured_x.end());
  std::sort(ticks.begin(), ticks.end());
  ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  double last_tick_right = -INFINITY;  // a tick label too close to the one before it is left out
  for (double x : ticks) {
    const std::string text = x == std::round(x) ? std::to_string(static_cast<int64_t>(x)) : format_number(x, 4);
    const double half = text_width(text, 11) / 2;
    if (px(x) - half < last_tick_right + 4) continue;
    last_tick_right = px(x) + half;
    svg << "<text x=\"" << num(px(x)) << "\" y=\"" << kBottom + 16 << "\" text-anchor=\"middle\">" << text << "</text>\n";
  }
  svg << "<text x=\"" << (kLeft + kRight) / 2 << "\" y=\"" << kHeight - 12 << "\" text-anchor=\"middle\">"
      << xml_escape(x_key) << (log_x ? " (log scale)" : "") << "</text>\n"
      << "<text transform=\"translate(16," << (kTop + kBottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">decode tok/s</text>\n";
  LabelPlacer labels(LabelBox{kLeft + 2, kTop + 2, kRight - 2, kBottom - 2});
  for (size_t i = 0; i < series.size(); ++i) {
    const SweepSeries& s = series[i];
    const char* colour = kColours[i % std::size(kColours)];
    std::string points;
    for (const CurvePoint& p : s.predicted) points += num(px(p.x)) + "," + num(py(p.decode_tokens_per_s)) + " ";
    svg << "<polyline points=\"" << points << "\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\"/>\n";
    for (size_t k = 0; k < s.measured_x.size(); ++k) {
      const double x = px(s.measured_x[k]);
      if (k < s.measured_low.size() && s.measured_high[k] > s.measured_low[k]) {  // the 95% interval as an error bar
        const double top = py(s.measured_high[k]), bottom = py(s.measured_low[k]);
        svg << "<path class=\"error-bar\" d=\"M" << num(x) << "," << num(top) << "V" << num(bottom) << "M" << num(x - 4)
            << "," << num(top) << "H" << num(x + 4) << "M" << num(x - 4) << "," << num(bottom) << "H" << num(x + 4)
            << "\" stroke=\"" << colour << "\" fill=\"none\"/>\n";
      }
      svg << "<circle cx=\"" << num(x) << "\" cy=\"" << num(py(s.measured_tokens_per_s[k])) << "\" r=\"4\" fill=\""
          << colour << "\"><title>measured " << format_number(s.measured_tokens_per_s[k], 4) << " tok/s";
      if (k < s.measured_low.size())
        svg << " (95% interval " << format_number(s.measured_low[k], 4) << " – " << format_number(s.measured_high[k], 4) << ")";
      svg << "</title></circle>\n";
    }
    for (size_t k = 0; k < s.measured_x.size(); ++k) {
      const double x = px(s.measured_x[k]), y = py(s.measured_tokens_per_s[k]);
      labels.block(LabelBox{x - 5, y - 5, x + 5, y + 5});
    }
    // The knee: where the predicted bound changes along the curve, labelled where the label
    // hits no other (left or right of the line, lower down).
    for (size_t k = 1; k < s.predicted.size(); ++k) {
      if (s.predicted[k].bound == s.predicted[k - 1].bound) continue;
      const double x = px(s.predicted[k].x);
      const std::string text = s.predicted[k - 1].bound + " → " + s.predicted[k].bound;
      svg << "<line x1=\"" << num(x) << "\" y1=\"" << kTop << "\" x2=\"" << num(x) << "\" y2=\"" << kBottom
          << "\" stroke=\"" << colour << "\" stroke-dasharray=\"4 3\"/>\n";
      for (double baseline = kTop + 14; baseline < kBottom; baseline += 14) {
        std::optional<LabelBox> placed;
        for (const double left : {x + 4, x - 4 - text_width(text, 11)}) {
          const LabelBox box = text_box(left, baseline, text, 11);
          if (!labels.is_free(box)) continue;
          labels.block(box);
          svg << "<text x=\"" << num(left) << "\" y=\"" << num(baseline) << "\" fill=\"" << colour << "\">"
              << xml_escape(text) << "</text>\n";
          placed = box;
          break;
        }
        if (placed) break;
      }
    }
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace

std::vector<SweepSeries> sweep_series(const std::vector<SweepPoint>& points, const std::vector<Scenario>& scenarios,
                                      const std::vector<nlohmann::json>& rows, const DeviceSpec& device) {
  std::vector<SweepSeries> result;
  if (points.empty() || points.front().values.empty()) return result;
  const std::string x_key = points.front().values.front().first;
  // One series when every point has its own x (a single key or a zipped sweep); else by the other keys.
  std::vector<double> xs;
  for (const SweepPoint& point : points) {
    const std::optional<double> x = number_of(point.values.front().second);
    if (!x) return result;
    xs.push_back(*x);
  }
  std::vector<double> sorted = xs;
  std::sort(sorted.begin(), sorted.end());
  const bool one_series = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  std::map<std::string, std::vector<size_t>> members;
  std::vector<std::string> order;
  for (size_t i = 0; i < points.size(); ++i) {
    std::string label;
    if (!one_series)
      for (size_t k = 1; k < points[i].values.size(); ++k)
        label += (label.empty() ? "" : " ") + points[i].values[k].first + "=" + points[i].values[k].second;
    if (!members.count(label)) order.push_back(label);
    members[label].push_back(i);
  }
  for (const std::string& label : order) {
    std::vector<size_t> indices = members[label];
    std::sort(indices.begin(), indices.end(), [&](size_t a, size_t b) { return xs[a] < xs[b]; });
    SweepSeries series;
    series.label = label;
    for (size_t k = 0; k < indices.size(); ++k) {
      const size_t i = indices[k];
      if (i < rows.size()) {
        const Estimate measured = run_summary_from_json(rows[i]).metrics.decode_tokens_per_s;
        if (measured.median > 0) {
          series.measured_x.push_back(xs[i]);
          series.measured_tokens_per_s.push_back(measured.median);
          series.measured_low.push_back(measured.low > 0 ? measured.low : measured.median);
          series.measured_high.push_back(measured.high > 0 ? measured.high : measured.median);
        }
      }
      // The row's own prediction where it has one, so that the curve and the table's
      // "predicted tok/s" are one number.
      const double row_predicted = i < rows.size() ? rows[i].value("predicted_decode_tokens_per_s", 0.0) : 0.0;
      if (row_predicted > 0) {
        const nlohmann::json prediction = rows[i].value("prediction", nlohmann::json::object());
        series.predicted.push_back(
            CurvePoint{xs[i], row_predicted, prediction.is_object() ? prediction.value("decode_bound", "-") : "-"});
      } else if (!x_of(scenarios[i].workload, x_key)) {
        // Along threads (or dtype, backend) the chart's one device would price every point
        // alike: a flat line that no row predicts. Only a row's own prediction places it.
      } else if (std::optional<CurvePoint> point = predicted_point(scenarios[i], xs[i], device)) {
        series.predicted.push_back(*point);
      }
      if (k + 1 == indices.size()) continue;
      for (const Workload& workload : workloads_between(scenarios[i].workload, scenarios[indices[k + 1]].workload)) {
        const std::optional<double> x = x_of(workload, x_key);
        if (!x) break;  // a key the chart cannot place between points
        Scenario in_between = scenarios[i];
        in_between.workload = workload;
        if (std::optional<CurvePoint> point = predicted_point(in_between, *x, device))
          series.predicted.push_back(*point);
      }
    }
    result.push_back(std::move(series));
  }
  return result;
}

void write_sweep_report(const std::filesystem::path& directory, const std::string& title, const std::string& table,
                        const std::string& x_key, const std::vector<SweepSeries>& series, const DeviceSpec& device) {
  std::filesystem::create_directories(directory);
  std::ostringstream html;
  html << "<header><h1>" << xml_escape(title) << "</h1></header>\n<section><h2>Decode tok/s, measured over predicted</h2>";
  html << "<p>Decode tok/s along " << xml_escape(x_key)
       << ": dots measured, the line predicted by the roofline model on " << xml_escape(device.name)
       << " (this device's roofs and fixed costs), at each point and between them; a dashed line marks where the "
          "predicted decode bound changes (for a batch sweep, the ridge point).</p>";
  if (series.empty()) {
    html << "<p>No chart: the first swept key is not a number.</p>";
  } else {
    html << "<div class=\"chart\">" << chart_svg(x_key, series) << "</div><div class=\"legend\">";
    for (size_t i = 0; i < series.size(); ++i) {
      html << "<span><span class=\"swatch\" style=\"background:" << kColours[i % std::size(kColours)] << "\"></span>"
           << (series[i].label.empty() ? std::string("the sweep") : xml_escape(series[i].label)) << "</span>";
    }
    html << "<span>line: predicted · dots: measured · dashed: the predicted bound changes</span></div>";
  }
  html << "</section>\n<section><h2>Rows</h2>" << scrolling_table(markdown_table_html(table))
       << "<p class=\"note\">predicted tok/s: the model's decode tok/s for the point; error: measured / predicted - 1.</p>"
       << "</section>\n";
  save_file_atomically(directory / "index.html", html_page(title, html.str()));
}

}  // namespace decodelab
