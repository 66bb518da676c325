// The decode phase in one reading, from the figures a run prints (the medians its cards and
// rows show), so that a page's or a row's headline can never contradict the numbers beside
// it. Decode is judged against a roof its kernels can reach: on a CPU the measured decode
// matvec rate for the run's precision and batch (the bandwidth roof times the efficiency
// table's η_bytes for such matmuls, Roofs::efficiency) — a
// copy's rate is a roof no matvec reaches, so against it decode would seldom read as
// memory-bound — with the copy's bandwidth roof named beside it; on a device without such a
// measurement, the bandwidth roof.
#pragma once

#include <string>

#include "profiling/device_spec.h"
#include "profiling/model/roofline.h"

namespace decodelab {

struct DecodeReading {
  double bandwidth = 0;      // bytes/s: the fixed path's bytes per step over the wall time per step
  double reachable_roof = 0; // bytes/s: the decode matvec's rate here, else the bandwidth roof
  bool matvec_roof = false;  // reachable_roof is the measured decode matvec rate
  double copy_roof = 0;      // bytes/s: the bandwidth roof (a large copy or streaming read)
  double busy_fraction = 1;  // device busy per step / wall time per step
  Limiter limiter = Limiter::Latency;
  std::string sentence;      // "decode is memory-bound: 7.69 GB/s, 81% of ..."

  double roof_fraction() const { return reachable_roof > 0 ? bandwidth / reachable_roof : 0.0; }
};

// `bandwidth` (bytes/s), the wall and busy ms per step, the sequences each step decodes and
// the run's precision, all as the run printed them. Overhead-bound when the device idles
// for thresholds.idle_overhead_fraction of each step; else memory-bound from
// thresholds.busy_fraction of the reachable roof; else latency-bound.
DecodeReading read_decode(double bandwidth, double wall_ms_per_step, double busy_ms_per_step, double tokens_per_step,
                          Precision precision, const DeviceSpec& spec, const LimiterThresholds& thresholds = {});

}  // namespace decodelab
