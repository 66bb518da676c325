// Device roofs: peak memory bandwidth and peak FLOP/s per precision, from a datasheet
// (configs/devices/*.yaml, each citing its source) and/or measured on the machine
// (profiling/measure/roof_measure.h). Non-obvious choice: a spec keeps both sets side by side and
// analysis uses the merged "effective" roofs — measured wherever a figure was measured,
// datasheet otherwise — because real roofs sit below the datasheet and reports show both.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <cstdint>

namespace decodelab {

// The unit an op's FLOPs run on: CUDA cores / CPU FMA units (fp32), or tensor cores.
enum class Precision : uint8_t { Fp32, Tf32, Fp16, Bf16 };
const char* precision_name(Precision precision);  // "fp32", "tf32", "fp16", "bf16"
std::optional<Precision> parse_precision(std::string_view name);

// One row of the efficiency table (Roofs::efficiency): what share of the roofs the kernels of
// one op category, precision and shape bucket reach, as timed on this machine.
struct Efficiency {
  std::string category;  // op_category_name(): "matmul", "attention", ...
  Precision precision = Precision::Fp32;
  int rows_from = 1;     // the rows class by its first row count: 1, 2 (2-8), 9 (9-64), 65 (65+)
  int size_log2 = 0;     // the size class: log2 of the depth (matmul), the context (attention), else the bytes
  double flops = 1;      // η_flops
  double bytes = 1;      // η_bytes
  std::string timed;     // what was timed for it, in words
  bool operator==(const Efficiency&) const = default;
};

struct Roofs {
  double bandwidth = 0;   // bytes/s, DRAM (HBM) streaming
  double fp32_flops = 0;  // FLOP/s; 0 = unknown
  double tf32_flops = 0;
  double fp16_flops = 0;
  double bf16_flops = 0;
  // CUDA-core fp64 (datasheet "FP64"); 0 = unknown. Only Nsight readings use it: the engine
  // runs no fp64 op, so no Precision names it.
  double fp64_flops = 0;
  std::string source;     // where the figures come from
  // The efficiency table: the share of the roofs an op of one category, precision and shape
  // bucket reaches (profiling/model/efficiency.h defines the buckets, the lookup and its
  // fallback). The prediction prices every op with one rule:
  //   time = max(FLOPs / (peak · η_flops), bytes / (bandwidth · η_bytes)) + fixed costs.
  // A CPU's table is timed by `decodelab calibrate` on the engine's own op shapes; an op whose
  // category has no entry takes the defaults below.
  std::vector<Efficiency> efficiency = {};
  // η for ops without an entry: a GPU device file's stated `efficiency:` (its source says
  // where the figures come from), else 1 (the roof itself).
  double default_flops_efficiency = 1;
  double default_bytes_efficiency = 1;
  std::string efficiency_source = {};  // where the defaults come from; "" = none given (1, the roof)
  // Measured roofs only (docs/metrics.md, "Roofs"): when, how steady, in what machine state.
  int64_t measured_at = 0;       // Unix seconds; 0 = not measured here (a datasheet, a quoted reference)
  double spread = 0;             // the largest (max - min) / median among the measured figures
  bool noisy = false;            // a figure's repeats disagreed, or the machine was contended
  double probe_bandwidth = 0;    // the machine check's bandwidth probe at that time (bytes/s); 0 = none
  double core_round_trip_ns = 0;  // the machine check's core round trip at that time; 0 = none

  // Peak for a precision; an unknown figure falls back to its sibling (fp16 <-> bf16,
  // tf32 -> fp32), then to fp32.
  double flops(Precision precision) const;
  // "taken 2 h ago, spread 3%" / "taken 5 min ago on a noisy or contended machine, spread 38%";
  // "" when not measured here.
  std::string age_and_spread(int64_t now_seconds) const;
  // FLOP/B where the bandwidth slope meets the compute roof.
  double ridge_point(Precision precision) const;
  bool has_any_flops() const { return fp32_flops > 0 || tf32_flops > 0 || fp16_flops > 0 || bf16_flops > 0; }
  bool operator==(const Roofs&) const = default;
};

// What a roofline leaves out: the fixed costs of issuing work and of reading results back.
// The prediction model (profiling/model/prediction.h) adds them to each op's roofline time.
struct FixedCosts {
  double host_launch = 0;          // s: host time to enqueue one op (the launch call itself)
  double op_overhead = 0;          // s: device time per op beyond its roofline time, ops queued back to back
  double sync_round_trip = 0;      // s: a blocking small device-to-host read on an idle device, call to return
  double host_link_bandwidth = 0;  // bytes/s of device<->host copies; 0 = not given (the memory bandwidth)
  std::string source;
  // s: what each parallel region an op's kernel opens adds (the CPU's fan-out to its kernel
  // threads and join, engine/cpu/fan_out.h); 0 where ops do not fan out on the host (a GPU)
  double parallel_region = 0;

  // The part of a round trip that is neither the read's launch nor its per-op overhead:
  // the wake-up and return after the device has done the read. A small read on an idle
  // device thus costs host_launch + op_overhead + return_latency() = sync_round_trip.
  double return_latency() const {
    const double rest = sync_round_trip - host_launch - op_overhead;
    return rest > 0 ? rest : 0.0;
  }
  bool operator==(const FixedCosts&) const = default;
};

// A cache the model prices a resident working set at: its capacity and read bandwidth.
// Of the bytes touched again after `reuse_bytes` of other bytes were touched (their reuse
// distance), the share a read still finds in the cache.
struct CacheHit {
  double reuse_bytes = 0;
  double resident = 0;  // 0..1
  bool operator==(const CacheHit&) const = default;
};

struct CacheLevel {
  double bytes = 0;      // capacity: every byte reused within it is found resident
  double bandwidth = 0;  // bytes/s
  std::string source;
  // Beyond the capacity, measured reuse distances and the share found resident there, in
  // increasing distance (the last at 0); between two points the share runs linearly, past
  // the last it is 0. Empty: nothing is resident beyond the capacity (a datasheet's cache).
  std::vector<CacheHit> beyond = {};
  // The share of the bytes at reuse distances [from, to) found resident, times to - from.
  double resident_bytes(double from, double to) const;
  // The reuse distance past which nothing is resident.
  double horizon() const { return beyond.empty() ? bytes : beyond.back().reuse_bytes; }
  bool operator==(const CacheLevel&) const = default;
};

// Who measured: measured roofs are only reused on the same machine and thread count.
struct MachineIdentity {
  std::string hostname;
  std::string cpu_model;
  int threads = 0;
  bool operator==(const MachineIdentity&) const = default;
};

struct DeviceSpec {
  std::string name;                 // file stem, e.g. "h100-sxm"
  std::string description;          // "NVIDIA H100 SXM5 80 GB"
  int sm_count = 0;                 // 0 for CPUs
  std::vector<std::string> match;   // substrings of a CUDA device name that select this spec
  // "8.0", "9.0": what an Nsight export's "CC" column says; "" for CPUs. With the bandwidth
  // it tells a GPU from an export that names none (profiling/nsight/ncu_reading.h).
  std::string compute_capability;
  std::optional<Roofs> datasheet;
  std::optional<Roofs> measured;
  std::optional<MachineIdentity> machine;  // for measured roofs of a CPU
  // Beside the peaks: published (datasheets, vendor measurements) and measured.
  std::optional<FixedCosts> fixed_costs;
  std::optional<CacheLevel> cache;
  std::optional<FixedCosts> measured_fixed_costs;
  std::optional<CacheLevel> measured_cache;
  // The last-level cache (GPU L2, CPU L3) in bytes; 0 = unknown. A working set within it
  // is not bounded by the DRAM bandwidth roof (the analysis says so). The prediction's
  // `cache` / `measured_cache` price such a working set: the same capacity with a read
  // bandwidth, where one was published or measured.
  double cache_bytes = 0;

  // Measured where measured, datasheet otherwise; throws std::logic_error if neither exists.
  Roofs effective_roofs() const;
  // "measured", "datasheet" or "measured + datasheet".
  std::string roofs_origin() const;
  // Measured where measured, published otherwise; nullopt when the spec has neither.
  std::optional<FixedCosts> effective_fixed_costs() const;
  std::optional<CacheLevel> effective_cache() const;
  // What a printed roof says about itself: its origin, then the measured set's age and
  // spread ("measured (taken 2 h ago, spread 3%)").
  std::string roofs_provenance(int64_t now_seconds) const;
  bool operator==(const DeviceSpec&) const = default;
};

// Loads a device YAML; any problem is an InputError naming the file, line and key.
DeviceSpec load_device_spec(const std::filesystem::path& file);
DeviceSpec parse_device_spec(std::string_view yaml_text, const std::string& file_name);
std::string device_spec_to_yaml(const DeviceSpec& spec);
// Writes atomically (temp file + rename), creating parent directories.
void save_device_spec(const DeviceSpec& spec, const std::filesystem::path& file);

// Directories searched for NAME.yaml: $DECODELAB_DEVICES, $DECODELAB_HOME/configs/devices,
// the source tree's configs/devices, then the install prefix's share/decodelab/configs/devices.
std::vector<std::filesystem::path> device_spec_directories();
// NAME (a file stem in those directories) or a path to a YAML file.
DeviceSpec find_device_spec(std::string_view name_or_path);
std::vector<std::string> list_device_specs();
// The spec whose `match` substrings occur in a CUDA device name (case-insensitive).
std::optional<DeviceSpec> match_device_spec(std::string_view device_name);

nlohmann::json to_json(const Roofs& roofs);
nlohmann::json to_json(const FixedCosts& costs);
nlohmann::json to_json(const CacheLevel& cache);
nlohmann::json to_json(const DeviceSpec& spec);
// `where` names the source in errors (file and JSON path).
DeviceSpec device_spec_from_json(const nlohmann::json& json, const std::string& where);

}  // namespace decodelab
