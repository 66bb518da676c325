// `sweep --report DIR`: the sweep's page — its table, and a chart of decode tok/s along the
// first swept key with the measured points over the predicted curve (lab/predict/row_prediction.h's
// model, this device's roofs and fixed costs). The curve is predicted at every sweep point and
// between them, so the decode-batch sweep shows its knee where the predicted bound turns from
// the bandwidth roof to the compute roof (the ridge point), marked on the chart.
//
// Non-obvious choice: points between two sweep points are made by stepping every workload
// count that differs between them geometrically at once, so a zipped sweep (requests and
// batch_size together) stays zipped between its points; series are the points that share
// every other swept value.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/scenario/scenario.h"
#include "lab/run/sweep.h"
#include "profiling/device_spec.h"

namespace decodelab {

struct CurvePoint {
  double x = 0;
  double decode_tokens_per_s = 0;
  std::string bound;  // what bounds the predicted decode phase
};

struct SweepSeries {
  std::string label;                 // the other swept values ("prompt_tokens=64"), empty for one series
  std::vector<double> measured_x;    // a sweep point's x and measured decode tok/s (rows present)
  std::vector<double> measured_tokens_per_s;
  std::vector<double> measured_low, measured_high;  // each measured point's 95% interval (its error bar)
  std::vector<CurvePoint> predicted; // sorted by x; at a measured point, the row's own prediction
};

// The chart's data: x is the first swept key's value; points whose x is not a number are left out.
// The curve passes through each row's own predicted_decode_tokens_per_s (priced with the roofs
// that point was read against: a threads sweep's points each have their own), and between
// points of a workload key through predictions on `device`; along a key that is not a workload
// count (threads) a point without its row's prediction has none on the curve.
std::vector<SweepSeries> sweep_series(const std::vector<SweepPoint>& points, const std::vector<Scenario>& scenarios,
                                      const std::vector<nlohmann::json>& rows, const DeviceSpec& device);

// DIR/index.html: the table (markdown, as printed) and the chart.
void write_sweep_report(const std::filesystem::path& directory, const std::string& title, const std::string& table,
                        const std::string& x_key, const std::vector<SweepSeries>& series, const DeviceSpec& device);

}  // namespace decodelab
