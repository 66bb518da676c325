// Measured roofs: what this device really sustains, against a Backend. Bandwidth from
// large `copy` ops (bytes read + written) and from a large matrix-vector `matmul` (the
// weight streamed once, as in decode), whichever is faster; FLOP/s from the backend's FMA
// probe where it has one (the CPU: register-resident FMA chains on every kernel thread,
// the arithmetic every dtype runs on, since half values are widened to fp32), else from a
// square `matmul` per dtype (fp32, fp16, bf16) on random data, which is also measured and
// reported beside the probe as what our matmul reaches; each timed by the device's own op timings (the
// backend's take_timings after a sync), warm-up first, then several repeats whose
// median and spread are reported, a figure flagged noisy when the repeats disagree.
// A roof is an upper bound and contention only ever slows an op down, so the roof itself
// is the fastest repeat: on a shared machine the median sits well below what the same
// hardware sustains, and a roof below achieved performance would read as >100% of roof.
// The efficiency table's timings (profiling/measure/efficiency_measure.h: the engine's own
// matmul and attention shapes, η = their time at these roofs over their time) take the median
// repeat instead: they stand for a run's typical op, and a run's figures are medians.
//
// Non-obvious choices: the bandwidth roof is the faster of copy and streaming read, because
// on a CPU a copy's stores also read their destination line first (write-allocate), so a
// copy alone sits well below what a read-dominated decode step reaches. CPU roofs are kept in
// the calibration (profiling/measure/calibration.h), so every run is held to measured roofs by
// default while the measurement itself (tens of seconds) happens once per machine and thread count.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "profiling/device_spec.h"
#include "profiling/measure/stream_costs.h"
#include "profiling/model/efficiency.h"

namespace decodelab {

// fp32, fp16, bf16: the dtypes whose matmul a measurement times (out of line: GCC 12 warns
// about an inlined initializer list here as possibly uninitialised).
std::vector<DType> default_matmul_dtypes();

// One decoder layer's shape, as the efficiency table times it: a model's name, hidden and MLP
// widths, query and KV heads and their size.
struct LayerShape {
  std::string model;
  int64_t hidden = 0;
  int64_t intermediate = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
};
// The layers of the models the project ships (configs/models/*.yaml, found beside the device
// files: device_spec_directories()), smallest first; empty when none is found.
std::vector<LayerShape> shipped_layer_shapes();

struct RoofMeasureOptions {
  size_t copy_bytes = 0;  // bytes of one copy's source; 0 = 256 MiB on CPU, 1 GiB on CUDA
  int matmul_size = 0;    // M = N = K; 0 = 1024 on CPU, 8192 on CUDA
  int warmups = 1;
  int repeats = 5;
  // After the first warm-up (which may fault its buffers in), more of them until they have
  // kept the device busy this long: a memory path ramps up under continuous traffic (for
  // tens of milliseconds after an idle second), and timed cold, the ramp reads as a noisy,
  // contended machine. 0: only `warmups`.
  double min_warmup_seconds = 0.06;
  std::vector<DType> matmul_dtypes = default_matmul_dtypes();  // also the decode attention's cache dtypes
  // CPU: the efficiency table (profiling/measure/efficiency_measure.h) — the engine's own
  // matmul and attention shapes of these layers (empty: those of the models under
  // configs/models, shipped_layer_shapes()), timed against one row count per rows class
  // and, for decode attention, at these contexts per sequence — each timed op kind's η.
  // Empty `efficiency_rows`: no table.
  std::vector<LayerShape> layer_shapes = {};
  std::vector<int> efficiency_rows = {1, 4, 24, 128};
  std::vector<int> efficiency_contexts = {32, 128, 512, 2048};
  int efficiency_sequences = 4;  // decode attention's sequences (a small batch)
  // The table's budget: its timed sequences repeat this many times (a rate per bucket, not a
  // roof: fewer repeats than the roofs' keep `calibrate` within two minutes), and a
  // compute-bound sequence takes at most these FLOPs (fewer layers; at least one weight), and
  // any sequence at most this many ops (a small model's ops would otherwise number thousands,
  // and their fixed costs, not their bytes, fill the budget).
  int efficiency_repeats = 3;
  double efficiency_flop_budget = 1e9;
  int efficiency_max_ops = 256;
  double noisy_spread = 0.10;  // a TimedSamples::spread above this flags a figure as noisy
  double fma_probe_flops = 2e10;  // FLOPs per FMA-probe repeat (about 0.05 s on a 2-core CPU)
  // Called before every timed op and between the measurement's stages; it throws to abandon
  // the measurement (a stop requested, a budget spent), which then caches nothing. The
  // longest wait for it is one op: a fraction of a second on a CPU. Empty: never abandoned.
  std::function<void()> checkpoint;
  // The bandwidth (copy and streaming read), the FMA peak and the stream's fixed costs only,
  // a few seconds where the whole measurement takes tens: for a budget too short for the
  // rest (the lab's). Its roofs say so in their source line, and no cache should hold them.
  bool quick = false;
  // CPU: find and time the last-level cache (profiling/measure/cache_level.h); off, the
  // measurement has no cache level (the test suite's quick calibration: its search reads
  // hundreds of MB).
  bool cache_level = true;
};

// Repeated device timings of one op and their summary.
struct TimedSamples {
  std::vector<double> seconds;
  double median = 0;
  double best = 0;    // the fastest sample
  // (max - min) / median below five samples; from five on, the range of the middle ones over
  // the median, a fifth of the samples left out at either end (of five to nine: the second
  // slowest less the second fastest; the machine check's probe takes its spread so): one
  // repeat held up by a hypervisor tick moves neither the best nor the median, the figures
  // taken from them.
  double spread = 0;
  bool noisy = false;
  int warmups = 0;              // warm-ups run before the samples (OpTimer: min_warmup_seconds after the first)
  double first_warmup = 0;      // the first warm-up's seconds (a cold start, page faults included)
  double warmup_seconds = 0;    // all warm-ups together

  static TimedSamples of(std::vector<double> seconds, double noisy_spread);
};

// Copies of one buffer timed on the device: the bandwidth of the fastest (bytes read +
// written). Shared by the roofs and the machine check's short probe.
struct CopyMeasurement {
  double bytes_moved = 0;  // per copy, read + written
  TimedSamples timing;
  double bandwidth = 0;    // bytes/s, the fastest copy
};
CopyMeasurement measure_copy(Backend& backend, size_t source_bytes, const RoofMeasureOptions& options);

struct RoofMeasurement {
  double copy_bytes_moved = 0;  // per copy, read + written
  TimedSamples copy;
  double copy_bandwidth = 0;    // bytes/s
  double read_bytes = 0;        // per matrix-vector product: weight + vector + output
  TimedSamples read;
  double read_bandwidth = 0;    // bytes/s
  struct Matmul {
    DType dtype = DType::F32;
    int size = 0;
    TimedSamples timing;
    double flops_per_s = 0;
  };
  std::vector<Matmul> matmuls;
  // The efficiency table's timings: a sequence of ops of one category, dtype and shape bucket
  // (the engine's own shapes of a shipped model's layer, streamed from memory), their
  // declared FLOPs and bytes and the parallel regions their kernels open, summed over the
  // sequence; η = their time at the roofs / (the median repeat less the regions' cost).
  struct KernelTiming {
    OpCategory category = OpCategory::Matmul;
    DType dtype = DType::F16;
    ShapeBucket bucket;
    std::string what;  // "lab-small: q/k/v, o, gate/up × 4 rows, 12 ops"
    int ops = 0;
    double flops = 0;
    double bytes = 0;
    double regions = 0;
    TimedSamples timing;
  };
  std::vector<KernelTiming> kernels;
  double bandwidth = 0;  // bytes/s: the faster of the copy and the streaming read
  TimedSamples fma;      // the backend's FMA probe, when it has one
  double fma_flops_per_s = 0;  // 0 = no probe: the compute roofs are the matmuls'
  // The fixed costs beside the roofs (profiling/measure/stream_costs.h), and the last-level cache
  // (CPU only; how it is found and checked: profiling/measure/cache_level.h).
  StreamCosts stream;
  double cache_reported_bytes = 0;  // what the OS reports (sysfs, else CPUID); 0 = nothing
  struct CacheRead {
    double weight_bytes = 0;
    double bytes = 0;      // weight + vector + output
    TimedSamples timing;
    double bandwidth = 0;  // bytes/s, the fastest repeat
  };
  TimedSamples cache_dram_read;       // the same product over a weight no cache holds, timed first
  double cache_dram_bandwidth = 0;    // bytes/s, its fastest repeat
  std::vector<CacheRead> cache_reads;  // in decreasing weight: those beyond the capacity, then the search's
  double cache_bytes = 0;  // the checked capacity; 0 = no cache found or measured
  // The fastest read of the plateau that set the capacity (the weight and the two below it).
  double cache_read_bytes = 0;
  TimedSamples cache_read;
  double cache_bandwidth = 0;

  FixedCosts fixed_costs() const;
  std::optional<CacheLevel> cache() const;
  // The shares found resident at the reuse distances read beyond the capacity (CacheLevel::beyond).
  std::vector<CacheHit> cache_hits_beyond(const CacheLevel& level) const;
  std::string cache_capacity_note() const;  // how the capacity was found, one sentence

  bool quick = false;  // RoofMeasureOptions::quick: the efficiency table, the cache and square matmuls not measured
  // The efficiency table from `kernels` against these roofs and the parallel region's cost.
  std::vector<Efficiency> efficiency_table(const Roofs& roofs) const;

  // Set by the caller from the machine check taken before the measurement.
  bool machine_contended = false;
  double probe_bandwidth = 0;   // that check's bandwidth probe (bytes/s)
  double core_round_trip_ns = 0;  // that check's core round trip (0 = not probed)

  double largest_spread() const;  // TimedSamples::spread of the least steady figure
  bool noisy() const;             // any figure noisy, or the machine contended
  // With a source line saying how they were measured, and when, how steady (measured_at,
  // spread, noisy, probe_bandwidth, core_round_trip_ns).
  Roofs roofs() const;
  std::string describe() const;  // one line per figure, with spread and noise flags
};

// Every figure with its samples' summary (bandwidths in GB/s = 1e9 B/s, rates in
// GFLOP/s, times in seconds): what `decodelab roofline --measure --json` writes.
nlohmann::json to_json(const RoofMeasurement& measurement);

RoofMeasurement measure_roofs(Backend& backend, const RoofMeasureOptions& options = {}, std::ostream* progress = nullptr);

// The backend's FMA probe timed like the roofs (warm-ups, repeats, the fastest repeat's
// rate); no samples and zero rates when the backend has no probe.
struct FmaPeak {
  TimedSamples timing;
  double flops_per_s = 0;         // the fastest repeat
  double median_flops_per_s = 0;
};
FmaPeak measure_fma_peak(Backend& backend, const RoofMeasureOptions& options = {}, std::ostream* progress = nullptr);

// A spec holding a measurement (and the machine identity) ready to save or analyse with.
DeviceSpec measured_spec(const std::string& description, const MachineIdentity& machine,
                         const RoofMeasurement& measurement);


// The backend measures a GPU (its roofs are the device's, not the host's).
bool is_gpu_backend(const Backend& backend);

// The bytes a decode-shaped measurement streams per repeat (the efficiency table's matmuls and
// attention): four times the last-level cache, 64 MiB at least, at most `memory_bytes`.
double decode_streamed_bytes(size_t memory_bytes);

}  // namespace decodelab
