// The decode reading from the printed medians (see decode_reading.h).
#include "profiling/model/decode_reading.h"

#include <algorithm>
#include <cmath>

#include "profiling/model/efficiency.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

// The rate a decode matmul of `precision` reaches here: the bandwidth roof times the
// efficiency table's η_bytes for matmuls of the batch's rows class (the nearest class timed),
// averaged geometrically over the depths timed; 0 when the table has no such matmul.
double decode_matvec_rate(const Roofs& roofs, Precision precision, double tokens_per_step) {
  const int wanted = rows_class(static_cast<int64_t>(std::max(1.0, std::round(tokens_per_step))));
  if (precision == Precision::Tf32) precision = Precision::Fp32;
  int best_class = 0;
  for (const Efficiency& row : roofs.efficiency) {
    if (row.category != op_category_name(OpCategory::Matmul) || row.precision != precision) continue;
    if (best_class == 0 || std::abs(std::log2(row.rows_from) - std::log2(wanted)) <
                               std::abs(std::log2(best_class) - std::log2(wanted)))
      best_class = row.rows_from;
  }
  double log_sum = 0;
  int count = 0;
  for (const Efficiency& row : roofs.efficiency) {
    if (row.category != op_category_name(OpCategory::Matmul) || row.precision != precision || row.rows_from != best_class)
      continue;
    log_sum += std::log(row.bytes);
    ++count;
  }
  return count > 0 ? roofs.bandwidth * std::exp(log_sum / count) : 0.0;
}

}  // namespace

DecodeReading read_decode(double bandwidth, double wall_ms_per_step, double busy_ms_per_step, double tokens_per_step,
                          Precision precision, const DeviceSpec& spec, const LimiterThresholds& thresholds) {
  DecodeReading reading;
  reading.bandwidth = bandwidth;
  const Roofs roofs = spec.measured || spec.datasheet ? spec.effective_roofs() : Roofs{};
  reading.copy_roof = roofs.bandwidth;
  const double matvec = decode_matvec_rate(roofs, precision, tokens_per_step);
  reading.matvec_roof = matvec > 0;
  reading.reachable_roof = matvec > 0 ? matvec : reading.copy_roof;
  reading.busy_fraction = wall_ms_per_step > 0 ? std::min(1.0, busy_ms_per_step / wall_ms_per_step) : 1.0;
  const double idle = 1 - reading.busy_fraction;
  if (idle >= thresholds.idle_overhead_fraction) {
    reading.limiter = Limiter::Overhead;
  } else if (reading.roof_fraction() >= thresholds.busy_fraction) {
    reading.limiter = Limiter::Memory;
  } else {
    reading.limiter = Limiter::Latency;
  }
  std::string roof = reading.matvec_roof ? "the " + format_bandwidth(reading.reachable_roof) + " a " +
                                               precision_name(precision) + " decode matvec reaches here"
                                         : "the " + format_bandwidth(reading.reachable_roof) + " bandwidth roof";
  std::string sentence = "decode is " + std::string(limiter_name(reading.limiter)) + "-bound: " +
                         format_bandwidth(bandwidth) + ", " + format_percent(reading.roof_fraction()) + " of " + roof;
  if (reading.matvec_roof && reading.copy_roof > 0)
    sentence += " (a copy's roof: " + format_bandwidth(reading.copy_roof) + ")";
  if (reading.limiter == Limiter::Overhead)
    sentence += "; the device idles " + format_percent(idle) + " of each step, waiting for the host";
  else if (reading.limiter == Limiter::Latency)
    sentence += "; neither the memory path nor the device's idle time accounts for the step";
  reading.sentence = sentence;
  return reading;
}

}  // namespace decodelab
