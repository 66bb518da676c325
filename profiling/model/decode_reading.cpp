// The decode reading from the printed medians (see decode_reading.h).
#include "profiling/model/decode_reading.h"

#include <algorithm>
#include <cmath>

#include "profiling/units.h"

namespace decodelab {

namespace {

// The measured decode matvec rate for `precision` at the largest measured row count not
// above the batch (rows beyond it only add compute); 0 when none was measured.
double decode_matvec_rate(const Roofs& roofs, Precision precision, double tokens_per_step) {
  const int batch = static_cast<int>(std::max(1.0, std::round(tokens_per_step)));
  const Roofs::DecodeMatmulCeiling* best = nullptr;
  for (const Roofs::DecodeMatmulCeiling& ceiling : roofs.decode_matmul_ceilings) {
    if (ceiling.precision != precision || ceiling.bandwidth <= 0) continue;
    const bool fits = ceiling.rows <= batch;
    const bool best_fits = best && best->rows <= batch;
    // The largest measured rows within the batch; failing that, the fewest rows measured.
    if (!best || (fits && (!best_fits || ceiling.rows > best->rows)) || (!fits && !best_fits && ceiling.rows < best->rows))
      best = &ceiling;
  }
  return best ? best->bandwidth : 0.0;
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
