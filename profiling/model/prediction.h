// The prediction model: an op stream (engine/events/op_stream.h) priced op by op against a
// device's roofs, efficiency table and fixed costs, on two timelines — the host's and the
// device's. One rule prices every op on every device:
//
//   device time of an op = max(FLOPs / (compute roof of its precision · η_flops),
//                              (DRAM bytes / bandwidth roof + cache-resident bytes / cache bandwidth) / η_bytes)
//                          + per-op overhead + parallel regions × the region's cost
//   (η: the efficiency table's for the op's category, precision and shape bucket,
//    profiling/model/efficiency.h; 1 where a device states none)
//   host time per op     = the workload's emulated dispatch cost + the launch call
//   an op starts at      max(device free, host has enqueued it)
//   a device-to-host read: the host waits until the device has drained its queue up to and
//                          including the read, then for the return latency
//
// so a sync exposes the queued device work, and host overhead shows as device idle time
// only when the host falls behind the device. Clocks are read as a measured generation
// reads them (engine/model/generator.cpp): marker to marker on the device, the total on the host.
//
// Non-obvious choice: which bytes come from a cache is decided by reuse distance, not by
// op type. Every operand access carries its address range (recorded on the dry-run
// device); the part of it that overlaps a range touched before is cache-resident when the
// distinct bytes touched since then, plus its own, fit in the cache. So lab-tiny's weights read from cache, lab-small's from DRAM, and
// a .contiguous() copy is read back by attention from cache — each for the reason it does.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model/generator.h"
#include "engine/events/op_stream.h"
#include "profiling/model/analysis.h"
#include "profiling/device_spec.h"

namespace decodelab {

// What bounds an op, or a span of time on the device.
enum class PredictedBound : uint8_t {
  Compute,      // FLOPs over the compute roof
  Memory,       // bytes over the DRAM bandwidth roof
  Cache,        // cache-resident bytes over the cache bandwidth
  OpOverhead,   // the fixed per-op cost on the device (dispatch, launch), beyond the roofline time
  HostDispatch, // device idle: the host had not enqueued the next op yet
  HostReads,    // device idle: the host was blocked in a device-to-host read, then relaunched
};
const char* predicted_bound_name(PredictedBound bound);  // "compute roof", "bandwidth roof", ...
const char* predicted_bound_key(PredictedBound bound);   // "compute", "memory", "cache", "op_overhead", ...

// A span of device time split by what bound each part: busy time by each op's bound
// (its roofline time by roof, its per-op overhead apart), idle time by its cause.
struct TimeSplit {
  double compute = 0;
  double memory = 0;
  double cache = 0;
  double overhead = 0;
  double host_dispatch = 0;
  double host_reads = 0;

  double busy() const { return compute + memory + cache + overhead; }
  double idle() const { return host_dispatch + host_reads; }
  double total() const { return busy() + idle(); }
  double part(PredictedBound bound) const;
  PredictedBound largest() const;
  void add(const TimeSplit& other);
};

// Ops of one category in one phase.
struct CategoryPrediction {
  Phase phase = Phase::Other;
  OpCategory category = OpCategory::Other;
  int64_t ops = 0;
  double flops = 0;
  double bytes = 0;        // declared bytes (profiling/model/cost_model.h)
  double cache_bytes = 0;  // the part priced at the cache's bandwidth
  TimeSplit busy;          // busy parts only
};

// Prefill (group start to first token) or decode (first token to the last step), summed
// over groups, and what bounded it.
struct PhasePrediction {
  Phase phase = Phase::Other;
  int64_t passes = 0;  // prefills, or decode steps
  int64_t ops = 0;     // markers excluded
  int64_t device_to_host_reads = 0;
  TimeSplit split;     // sums to the phase's wall time
  PredictedBound bound = PredictedBound::Memory;  // split.largest()
  double wall_seconds() const { return split.total(); }
};

struct PredictionInputs {
  Roofs roofs;
  FixedCosts costs;
  std::optional<CacheLevel> cache;  // none: every byte is priced at the DRAM roof
  double host_overhead = 0;         // s per op enqueued: the workload's host_overhead_us
};

struct Prediction {
  PredictionInputs inputs;
  GenerationTiming timing;            // the clocks a measured generation reports, predicted
  std::vector<double> step_busy_ms;   // device busy per decode step, in order
  std::vector<PhasePrediction> phases;          // prefill, decode (those present)
  std::vector<CategoryPrediction> categories;   // by phase, then by device time
  int64_t ops = 0;                              // markers excluded
  // Each op kind priced without its own bucket in the efficiency table, and what it used
  // instead ("matmul fp16 rows 2-8, K ~ 2^7: nearest timed bucket rows 2-8, K ~ 2^8 ...").
  std::vector<std::string> efficiency_notes;

  const PhasePrediction* phase(Phase which) const;
  // Medians over the decode steps (0 without steps).
  double decode_step_wall_ms() const;
  double decode_step_busy_ms() const;
};

Prediction predict_op_stream(const OpStream& stream, const PredictionInputs& inputs);

// The inputs a device spec gives: effective roofs, fixed costs and cache. Throws
// InputError naming the device when it has no fixed costs (the model needs them).
PredictionInputs prediction_inputs(const DeviceSpec& device, double host_overhead_seconds);

nlohmann::json to_json(const TimeSplit& split);
nlohmann::json to_json(const Prediction& prediction);

}  // namespace decodelab
