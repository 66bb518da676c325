// The roofline reading of one op or a group of ops: intensity, achieved FLOP/s and B/s,
// the roof at that intensity, % of roof, and the limiter — compute, memory, latency or
// overhead — by the rules of the profiling seed (000): a tiny op is overhead-bound; an op
// whose busier unit is below 60% of its peak is latency-bound; otherwise the busier unit.
// Non-obvious choice: % of roof is computed as (time the work would take at the roof) ÷
// (time it took). For one op that equals achieved ÷ roof-at-its-intensity, which is
// max(compute fraction, memory fraction); summed over ops it stays exact when a group
// mixes precisions (an fp32 matmul and an fp16 one are each held to their own roof).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "profiling/model/cost_model.h"
#include "profiling/device_spec.h"

namespace decodelab {

enum class Limiter : uint8_t { Compute, Memory, Latency, Overhead };
const char* limiter_name(Limiter limiter);  // "compute", "memory", "latency", "overhead"

// Every threshold the readings use, in one place.
struct LimiterThresholds {
  // Below this duration an op's fixed launch cost dominates: overhead-bound. GPUs: the
  // seed's 10 µs, a few times a kernel launch. CPU backend: 5 µs, the same few-times margin
  // over its fixed cost per op (stream hand-off plus an OpenMP fork/join), measured at
  // ~1 µs on 2 cores: a 1024-element add takes 1.05 µs, a marker 0.15 µs.
  double tiny_op_seconds_gpu = 10e-6;
  double tiny_op_seconds_cpu = 5e-6;
  // A unit is "near its roof" from this share of its peak; both below it: latency-bound.
  double busy_fraction = 0.60;
  // Global-load sectors per request above this mean uncoalesced access (4 is ideal for
  // 4-byte words, 32 is one sector per thread).
  double uncoalesced_sectors_per_request = 8.0;
  // Achieved occupancy below this share leaves too few warps to hide memory latency.
  double low_occupancy_fraction = 0.25;
  // A step (or phase) whose device is idle for at least this share of its time is
  // overhead-bound: the seed's "GPU idle between kernels? yes" branch, before any kernel.
  double idle_overhead_fraction = 0.30;
  // Device idle intervals at least this long count as gaps; shorter ones are the stream's
  // own hand-off between back-to-back ops (CPU backend: median 0.24 µs, 99th percentile
  // 6.2 µs on 2 cores; GPUs: 1-2 µs between queued kernels).
  double gap_seconds_gpu = 5e-6;
  double gap_seconds_cpu = 10e-6;
  // A host stall (profiling/model/host_stalls.h): an enqueue this much longer than the trace's
  // median one, or this long a gap between two host events in a run — 50 times a whole
  // enqueue on the CPU backend, and above a GPU launch's few microseconds.
  double host_stall_seconds = 50e-6;
  // A side whose decode device time is idle for a stalled host this share of it or more
  // ran with its host thread starved: the machine was not quiet for a check of the model.
  double host_starved_fraction = 0.05;
  // Work running this far above its roof means the roofs are wrong (measured under load,
  // or on another access pattern), not that the op beats physics: the reading says so.
  double above_roof_fraction = 1.10;
  // Below this intensity (FLOP/B) a reading quotes bandwidth rather than FLOP/s.
  double bandwidth_view_below_intensity = 1.0;
  // A figure within this share of a threshold (relative: 0.15 puts 51%..69% near the 60%
  // busy line), or a point whose compute and memory fractions differ by less than it (near
  // the ridge), is called near the limiter across that line: "memory-bound, near
  // latency-bound". The verdict then does not flip silently when noise moves the point.
  double near_margin = 0.15;

  double tiny_op_seconds(bool gpu) const { return gpu ? tiny_op_seconds_gpu : tiny_op_seconds_cpu; }
  double gap_seconds(bool gpu) const { return gpu ? gap_seconds_gpu : gap_seconds_cpu; }
};

// Work, time and the time the same work needs at each roof, summed over one or more ops.
struct RooflinePoint {
  double flops = 0;
  double bytes = 0;
  double seconds = 0;
  double compute_seconds = 0;  // the FLOPs at their precision's peak
  double memory_seconds = 0;   // the bytes at peak bandwidth
  double roof_seconds = 0;     // per op max(compute, memory), summed: the time at the roof
  int64_t count = 0;

  void add(const OpCost& cost, double op_seconds, const Roofs& roofs);
  void add(const RooflinePoint& other);

  double intensity() const { return bytes > 0 ? flops / bytes : 0.0; }
  double achieved_flops() const { return seconds > 0 ? flops / seconds : 0.0; }
  double achieved_bandwidth() const { return seconds > 0 ? bytes / seconds : 0.0; }
  double compute_fraction() const { return seconds > 0 ? compute_seconds / seconds : 0.0; }
  double memory_fraction() const { return seconds > 0 ? memory_seconds / seconds : 0.0; }
  double roof_fraction() const { return seconds > 0 ? roof_seconds / seconds : 0.0; }
  // Attainable FLOP/s at this intensity (what the roof line shows above the point).
  double roof_flops() const { return roof_seconds > 0 ? flops / roof_seconds : 0.0; }
  double mean_seconds() const { return count > 0 ? seconds / static_cast<double>(count) : 0.0; }
  bool memory_side() const { return memory_seconds >= compute_seconds; }
};

// The seed's rules on two unit utilisations (fractions of peak) and an op's duration.
Limiter classify_limiter(double op_seconds, double compute_fraction, double memory_fraction, bool gpu,
                         const LimiterThresholds& thresholds);
// The limiter of a group of ops: its mean op duration and unit fractions.
Limiter classify_limiter(const RooflinePoint& point, bool gpu, const LimiterThresholds& thresholds);

// The limiter across the closest threshold when the figures lie within near_margin of it
// (tiny-op duration, the busy fraction, the ridge; for a phase or step also the idle share
// with `idle_fraction` >= 0), else nullopt.
std::optional<Limiter> near_limiter(double op_seconds, double compute_fraction, double memory_fraction, bool gpu,
                                    const LimiterThresholds& thresholds, double idle_fraction = -1);
std::optional<Limiter> near_limiter(const RooflinePoint& point, bool gpu, const LimiterThresholds& thresholds,
                                    double idle_fraction = -1);
// "memory-bound", or "memory-bound, near latency-bound".
std::string limiter_verdict(Limiter limiter, std::optional<Limiter> near);
// The same, short, for table cells: "memory", "memory, near latency".
std::string limiter_cell(Limiter limiter, std::optional<Limiter> near);
// The rules in one paragraph, generated from the thresholds (the reports' footnote).
std::string limiter_rules_text(const LimiterThresholds& thresholds, bool gpu);

// One kernel's summary in the shape of Nsight Compute's "speed of light" section.
struct KernelReport {
  std::string kernel;
  double duration_us = 0;
  double flops = 0;
  double dram_bytes = 0;
  double sm_throughput_pct = 0;      // "Compute (SM) Throughput"
  double memory_throughput_pct = 0;  // "Memory Throughput"
  std::optional<double> achieved_occupancy_pct;
  std::optional<double> sectors_per_request;  // global loads
};

struct KernelReading {
  std::string kernel;
  double intensity = 0;            // FLOP/B
  double achieved_flops = 0;       // FLOP/s
  double achieved_bandwidth = 0;   // B/s
  double roof_flops = 0;           // FLOP/s attainable at this intensity
  double roof_fraction = 0;        // achieved ÷ roof
  Limiter limiter = Limiter::Latency;       // the verdict (tiny ops: overhead)
  Limiter unit_limiter = Limiter::Latency;  // what the unit throughputs alone say
  bool tiny = false;
  bool uncoalesced = false;
  bool low_occupancy = false;
  // The reading, one finding per line: the roofline placement first, then the tiny-kernel
  // finding when it applies, then coalescing and the units' verdict (ncu_reading relies on it).
  std::vector<std::string> lines;
};

// Reads a kernel report against a device's peaks (GPU rules), as the seed's program does.
KernelReading read_kernel_report(const KernelReport& report, double peak_flops, double peak_bandwidth,
                                 const LimiterThresholds& thresholds = {});

}  // namespace decodelab
