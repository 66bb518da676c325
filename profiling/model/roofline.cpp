// Roofline placement and the limiter rules. The kernel-report reading keeps the seed's
// wording so a reader of the seed recognises every line.
#include "profiling/model/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace decodelab {

const char* limiter_name(Limiter limiter) {
  switch (limiter) {
    case Limiter::Compute: return "compute";
    case Limiter::Memory: return "memory";
    case Limiter::Latency: return "latency";
    case Limiter::Overhead: return "overhead";
  }
  return "latency";
}

void RooflinePoint::add(const OpCost& cost, double op_seconds, const Roofs& roofs) {
  const double peak_flops = roofs.flops(cost.precision);
  const double op_compute = peak_flops > 0 ? cost.flops / peak_flops : 0.0;
  const double op_memory = roofs.bandwidth > 0 ? cost.bytes() / roofs.bandwidth : 0.0;
  flops += cost.flops;
  bytes += cost.bytes();
  seconds += op_seconds;
  compute_seconds += op_compute;
  memory_seconds += op_memory;
  roof_seconds += std::max(op_compute, op_memory);
  ++count;
}

void RooflinePoint::add(const RooflinePoint& other) {
  flops += other.flops;
  bytes += other.bytes;
  seconds += other.seconds;
  compute_seconds += other.compute_seconds;
  memory_seconds += other.memory_seconds;
  roof_seconds += other.roof_seconds;
  count += other.count;
}

Limiter classify_limiter(double op_seconds, double compute_fraction, double memory_fraction, bool gpu,
                         const LimiterThresholds& thresholds) {
  if (op_seconds < thresholds.tiny_op_seconds(gpu)) return Limiter::Overhead;
  if (std::max(compute_fraction, memory_fraction) < thresholds.busy_fraction) return Limiter::Latency;
  return memory_fraction > compute_fraction ? Limiter::Memory : Limiter::Compute;
}

Limiter classify_limiter(const RooflinePoint& point, bool gpu, const LimiterThresholds& thresholds) {
  return classify_limiter(point.mean_seconds(), point.compute_fraction(), point.memory_fraction(), gpu, thresholds);
}

namespace {

double relative_distance(double value, double threshold) {
  return threshold > 0 ? std::fabs(value / threshold - 1) : INFINITY;
}

}  // namespace

std::optional<Limiter> near_limiter(double op_seconds, double compute_fraction, double memory_fraction, bool gpu,
                                    const LimiterThresholds& thresholds, double idle_fraction) {
  const Limiter work = classify_limiter(op_seconds, compute_fraction, memory_fraction, gpu, thresholds);
  const bool idle_rule = idle_fraction >= 0;
  const Limiter limiter = idle_rule && idle_fraction >= thresholds.idle_overhead_fraction ? Limiter::Overhead : work;
  std::optional<Limiter> nearest;
  double closest = thresholds.near_margin;
  auto consider = [&](double distance, Limiter across) {
    if (across != limiter && distance <= closest) {
      closest = distance;
      nearest = across;
    }
  };
  const double tiny = thresholds.tiny_op_seconds(gpu);
  const double busier = std::max(compute_fraction, memory_fraction);
  const Limiter unit = memory_fraction > compute_fraction ? Limiter::Memory : Limiter::Compute;
  if (idle_rule) consider(relative_distance(idle_fraction, thresholds.idle_overhead_fraction),
                          limiter == Limiter::Overhead ? work : Limiter::Overhead);
  if (limiter == Limiter::Overhead && !(idle_rule && idle_fraction >= thresholds.idle_overhead_fraction)) {
    // Just under the tiny-op line: across it, the units decide.
    consider(relative_distance(op_seconds, tiny), classify_limiter(tiny, compute_fraction, memory_fraction, gpu, thresholds));
  } else if (work != Limiter::Overhead) {
    consider(relative_distance(op_seconds, tiny), Limiter::Overhead);
  }
  if (work != Limiter::Overhead) {
    consider(relative_distance(busier, thresholds.busy_fraction), work == Limiter::Latency ? unit : Limiter::Latency);
    const double lesser = std::min(compute_fraction, memory_fraction);
    if ((work == Limiter::Memory || work == Limiter::Compute) && lesser > 0) {
      consider(busier / lesser - 1, work == Limiter::Memory ? Limiter::Compute : Limiter::Memory);
    }
  }
  return nearest;
}

std::optional<Limiter> near_limiter(const RooflinePoint& point, bool gpu, const LimiterThresholds& thresholds,
                                    double idle_fraction) {
  return near_limiter(point.mean_seconds(), point.compute_fraction(), point.memory_fraction(), gpu, thresholds,
                      idle_fraction);
}

std::string limiter_verdict(Limiter limiter, std::optional<Limiter> near) {
  std::string text = std::string(limiter_name(limiter)) + "-bound";
  if (near) text += std::string(", near ") + limiter_name(*near) + "-bound";
  return text;
}

std::string limiter_cell(Limiter limiter, std::optional<Limiter> near) {
  std::string text = limiter_name(limiter);
  if (near) text += std::string(", near ") + limiter_name(*near);
  return text;
}

std::string limiter_rules_text(const LimiterThresholds& t, bool gpu) {
  auto percent = [](double fraction) {
    char text[16];
    std::snprintf(text, sizeof text, "%.0f%%", fraction * 100);
    return std::string(text);
  };
  auto micro = [](double seconds) {
    char text[24];
    std::snprintf(text, sizeof text, "%.0f µs", seconds * 1e6);
    return std::string(text);
  };
  const double low = t.busy_fraction * (1 - t.near_margin), high = t.busy_fraction * (1 + t.near_margin);
  return "Limiter rules: an op averaging under " + micro(t.tiny_op_seconds(gpu)) +
         " is overhead-bound (a launch dominates it); otherwise, when neither the compute nor the memory unit reaches " +
         percent(t.busy_fraction) + " of its roof, latency-bound; otherwise bound by the busier unit. A phase or step " +
         "whose device is idle " + percent(t.idle_overhead_fraction) + " of the time or more is overhead-bound. A " +
         "reading within " + percent(t.near_margin) + " of a line (e.g. the busier unit between " + percent(low) +
         " and " + percent(high) + ", or compute and memory fractions within " + percent(t.near_margin) +
         " of each other: near the ridge) is called near the limiter across it. Gaps are device idle intervals of " +
         micro(t.gap_seconds(gpu)) + " or more. A point above " + percent(t.above_roof_fraction) +
         " of its roof is explained: a working set within the last-level cache is not bounded by the DRAM roof; " +
         "otherwise the roof is reported as suspect (never measured again by itself: `decodelab calibrate` does).";
}

namespace {

template <typename... Args>
std::string format(const char* pattern, Args... args) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, pattern, args...);
  return buffer;
}

}  // namespace

KernelReading read_kernel_report(const KernelReport& report, double peak_flops, double peak_bandwidth,
                                 const LimiterThresholds& thresholds) {
  KernelReading reading;
  reading.kernel = report.kernel;
  const double seconds = report.duration_us * 1e-6;
  reading.achieved_flops = seconds > 0 ? report.flops / seconds : 0.0;
  reading.achieved_bandwidth = seconds > 0 ? report.dram_bytes / seconds : 0.0;
  reading.intensity = report.dram_bytes > 0 ? report.flops / report.dram_bytes : 0.0;
  reading.roof_flops = std::min(peak_flops, reading.intensity * peak_bandwidth);
  // max(compute, memory) fraction == achieved ÷ roof at this intensity (see the header).
  reading.roof_fraction = std::max(peak_flops > 0 ? reading.achieved_flops / peak_flops : 0.0,
                                   peak_bandwidth > 0 ? reading.achieved_bandwidth / peak_bandwidth : 0.0);

  if (reading.intensity >= thresholds.bandwidth_view_below_intensity) {
    reading.lines.push_back(format("%.0f TFLOP/s at %.0f FLOP/B; roof %.0f TFLOP/s -> %.0f%% of roofline",
                                   reading.achieved_flops / 1e12, reading.intensity, reading.roof_flops / 1e12,
                                   reading.roof_fraction * 100.0));
  } else {
    reading.lines.push_back(format("%.2f TB/s of DRAM -> %.0f%% of peak bandwidth", reading.achieved_bandwidth / 1e12,
                                   reading.achieved_bandwidth / peak_bandwidth * 100.0));
  }

  const double compute_fraction = report.sm_throughput_pct / 100.0;
  const double memory_fraction = report.memory_throughput_pct / 100.0;
  reading.tiny = seconds < thresholds.tiny_op_seconds_gpu;
  reading.limiter = classify_limiter(seconds, compute_fraction, memory_fraction, true, thresholds);
  // The units' own verdict, as if the kernel were long enough to amortise its launch.
  reading.unit_limiter = classify_limiter(thresholds.tiny_op_seconds_gpu, compute_fraction, memory_fraction, true,
                                          thresholds);
  reading.uncoalesced = report.sectors_per_request.has_value() &&
                        *report.sectors_per_request > thresholds.uncoalesced_sectors_per_request;
  reading.low_occupancy = report.achieved_occupancy_pct.has_value() &&
                          *report.achieved_occupancy_pct < thresholds.low_occupancy_fraction * 100.0;

  if (reading.tiny) reading.lines.push_back("tiny kernel: launch overhead dominates; fuse or use CUDA graphs");
  if (reading.uncoalesced) {
    reading.lines.push_back(format("%.0f sectors/request: uncoalesced access", *report.sectors_per_request));
  }
  switch (reading.unit_limiter) {
    case Limiter::Latency:
      reading.lines.push_back("neither unit busy: latency-bound; check occupancy and stalls");
      if (reading.low_occupancy) {
        reading.lines.push_back(
            format("occupancy %.0f%%: too few warps to hide latency", *report.achieved_occupancy_pct));
      }
      break;
    case Limiter::Memory: reading.lines.push_back("memory-bound: cut bytes (fuse, lower precision, reuse in SRAM)"); break;
    case Limiter::Compute: reading.lines.push_back("compute-bound: use tensor cores / lower precision, or accept"); break;
    case Limiter::Overhead: break;  // unit_limiter is computed at a non-tiny duration
  }
  return reading;
}

}  // namespace decodelab
