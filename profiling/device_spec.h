// Device roofs: peak memory bandwidth and peak FLOP/s per precision, from a datasheet
// (configs/devices/*.yaml, each citing its source) and/or measured on the machine
// (profiling/roof_measure.h). Non-obvious choice: a spec keeps both sets side by side and
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

struct Roofs {
  double bandwidth = 0;   // bytes/s, DRAM (HBM) streaming
  double fp32_flops = 0;  // FLOP/s; 0 = unknown
  double tf32_flops = 0;
  double fp16_flops = 0;
  double bf16_flops = 0;
  std::string source;     // where the figures come from
  // Measured roofs only (docs/metrics.md, "Roofs"): when, how steady, in what machine state.
  int64_t measured_at = 0;       // Unix seconds; 0 = not measured here (a datasheet, a quoted reference)
  double spread = 0;             // the largest (max - min) / median among the measured figures
  bool noisy = false;            // a figure's repeats disagreed, or the machine was contended
  double probe_bandwidth = 0;    // the machine check's bandwidth probe at that time (bytes/s); 0 = none

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
  std::optional<Roofs> datasheet;
  std::optional<Roofs> measured;
  std::optional<MachineIdentity> machine;  // for measured roofs of a CPU
  // The last-level cache (GPU L2, CPU L3) in bytes; 0 = unknown. A working set within it
  // is not bounded by the DRAM bandwidth roof.
  double cache_bytes = 0;

  // Measured where measured, datasheet otherwise; throws std::logic_error if neither exists.
  Roofs effective_roofs() const;
  // "measured", "datasheet" or "measured + datasheet".
  std::string roofs_origin() const;
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
nlohmann::json to_json(const DeviceSpec& spec);
// `where` names the source in errors (file and JSON path).
DeviceSpec device_spec_from_json(const nlohmann::json& json, const std::string& where);

}  // namespace decodelab
