// Analysis of one trace against a device's roofs: the seed's reading discipline made
// automatic. Timeline first (per run, phase and step: wall time, device busy and idle,
// gaps, syncs, ops), then the work: per op category × phase and per top op, FLOPs, bytes,
// time, intensity, achieved rates, % of roof and the limiter; and one plain-words summary.
// Everything printers show comes from RunAnalysis, one schema with a schema_version.
//
// Non-obvious choice: an idle interval on the device belongs to the op that ends it —
// the step whose first op waited for the host is the step that paid for the wait — so
// per-step busy + idle add up to the device timeline with nothing counted twice.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiling/device_spec.h"
#include "profiling/model/roofline.h"
#include "profiling/trace.h"

namespace decodelab {

enum class Phase : uint8_t { Prefill, Decode, Other };
const char* phase_name(Phase phase);  // "prefill", "decode", "other"

constexpr size_t kOpCategoryCount = static_cast<size_t>(OpCategory::Other) + 1;

// Device and host activity over a span of time (a run, a phase, a step).
struct TimelineStats {
  // The span's length on the clock its ranges were taken on: for a decodelab trace the
  // host clock inside the ranges (enqueue, host overhead, syncs: "host time" in reports,
  // host_seconds in JSON); for an Nsight Systems export the device timeline or NVTX ranges.
  double span_seconds = 0;
  double busy_seconds = 0;    // device executing the span's ops (union of their intervals)
  double idle_seconds = 0;    // device waiting before the span's ops
  int64_t gaps = 0;           // idle intervals at least LimiterThresholds::gap_seconds long
  double largest_gap_seconds = 0;
  int64_t syncs = 0;          // Synchronize and DeviceToHost host calls in the span
  // Device idle time while the host thread was stalled (profiling/model/host_stalls.h: it had
  // lost its core), and the idle intervals that held some.
  double host_stall_seconds = 0;
  int64_t host_stalls = 0;
  int64_t ops = 0;            // ops enqueued in the span (markers excluded)

  double device_seconds() const { return busy_seconds + idle_seconds; }
  double idle_fraction() const { return device_seconds() > 0 ? idle_seconds / device_seconds() : 0.0; }
  double busy_fraction() const { return device_seconds() > 0 ? busy_seconds / device_seconds() : 0.0; }
  double host_stall_fraction() const { return device_seconds() > 0 ? host_stall_seconds / device_seconds() : 0.0; }
  void add(const TimelineStats& other);
};

// Ops grouped by a key: a category row (name and label empty) or a top-op row.
struct OpGroup {
  Phase phase = Phase::Other;
  OpCategory category = OpCategory::Other;
  std::string name;        // op name ("matmul"); top-op rows only
  std::string label;       // place in the model ("q_proj"); top-op rows only
  std::string precision;   // compute roof(s) the ops were held to: "fp16", "fp32", "fp32+fp16"
  RooflinePoint point;     // work, time, roof times, count
  Limiter limiter = Limiter::Latency;
  std::optional<Limiter> near;  // the limiter across a threshold the reading sits close to
  double share_of_device_time = 0;  // of the run's busy device time
};

// A group of ops that ran above its roof, and why (never drawn above it unexplained).
struct AboveRoof {
  Phase phase = Phase::Other;
  OpCategory category = OpCategory::Other;
  double roof_fraction = 0;
  double working_set_bytes = 0;  // the phase's declared bytes per pass (decode: per step)
  double cache_bytes = 0;        // the device's last-level cache; 0 = unknown
  bool cache_resident = false;   // working set within the cache: the DRAM roof does not bound it
  std::string explanation;
};

struct StepStats {
  int ordinal = 0;        // position among all decode steps of the trace
  int index = -1;         // the step range's own index
  int group = -1;         // index of the enclosing group range, -1 if none
  TimelineStats timeline;
  std::array<double, kOpCategoryCount> category_seconds{};  // busy time per op category
  bool overhead_bound = false;
};

struct PhaseStats {
  Phase phase = Phase::Other;
  TimelineStats timeline;
  RooflinePoint point;     // its ops with device times and declared work
  double opaque_fraction = 0;  // share of its op time in ops with no declared work (graph replays)
  Limiter limiter = Limiter::Latency;
  std::optional<Limiter> near;
  int64_t steps = 0;       // decode steps or prefills in the phase
  std::string summary;     // "decode is memory-bound at 81% of the bandwidth roof"
};

struct RunTimeline {
  int index = -1;          // the run range's index
  TimelineStats timeline;
  std::string summary;
};

struct AnalysisOptions {
  LimiterThresholds thresholds;
  size_t top_ops = 12;
};

struct RunAnalysis {
  // 2: a timeline's "wall_seconds" (host time) renamed "host_seconds"; near limiters; above_roof.
  static constexpr int kSchemaVersion = 2;

  // What ran where (from the trace's metadata) and the roofs it was held to.
  std::string backend;
  std::string device;
  std::string dtype;
  ModelShape model;
  DeviceSpec device_spec;
  Roofs roofs;              // effective: measured where measured, datasheet otherwise
  LimiterThresholds thresholds;
  bool gpu = false;

  TimelineStats timeline;   // the whole trace
  std::vector<RunTimeline> runs;
  std::vector<PhaseStats> phases;     // prefill, decode, other — those present
  std::vector<OpGroup> categories;    // category × phase, by device time
  std::vector<OpGroup> top_ops;       // name × label × phase × precision, by device time
  std::vector<StepStats> steps;       // decode steps, in order
  int64_t ops_without_timing = 0;     // ops whose device time never arrived
  std::vector<AboveRoof> above_roof;  // groups above their roof, each explained
  std::string summary;                // one sentence per phase and the device's idle share
  std::vector<std::string> notes;     // caveats about the reading itself (roofs too low, untimed ops)

  const PhaseStats* phase(Phase which) const;
  // The share of the decode phase's device time (the whole run's, without decode steps)
  // idle for a stalled host (TimelineStats::host_stall_seconds).
  double host_stall_fraction() const;
  // A group ran above its roof with a working set larger than the cache (or an unknown
  // cache): the measured roofs are suspect and worth measuring again.
  bool roofs_suspect() const;
};

// Uses the trace's own device spec when `device` is null.
RunAnalysis analyze(const Trace& trace, const DeviceSpec* device = nullptr, const AnalysisOptions& options = {});

nlohmann::json to_json(const RunAnalysis& analysis);

}  // namespace decodelab
