// The seed's reading discipline applied to an Nsight Compute export: per profiled launch,
// the three numbers (duration, FLOPs, DRAM bytes), then intensity, achieved rate, % of
// roof, SM% vs memory%, occupancy, sectors per request and the limiter with its advice —
// all through read_kernel_report (profiling/model/roofline.h), so the words are the seed's.
//
// FLOPs come from the counters Nsight Compute's roofline sections use: per precision
// add + mul + 2·fma thread instructions (sm__sass_thread_inst_executed_op_{f,h,d}{add,mul,fma}
// _pred_on.sum), plus tensor-pipe operations (sm__ops_path_tensor_src_{fp16,bf16_dst_fp32,
// tf32_dst_fp32,fp64}.sum, which count FLOPs themselves).
// Non-obvious choice: each precision's FLOPs are held to their own roof and the kernel's
// peak is the resulting harmonic mix (FLOPs ÷ Σ FLOPs_p/peak_p), so a GEMM's bf16 tensor
// work meets the 989 TFLOP/s roof while its fp32 epilogue meets the 67 TFLOP/s one. fp64
// meets the device's fp64 peak where its file gives one; CUDA-core fp16 the fp32 roof.
//
// The device: --device, else the export's display name, else its compute capability with
// the DRAM peak the export implies (memory clock × bus width from device__attribute_*, or
// bytes ÷ duration ÷ the DRAM throughput percentage) matched to one configs/devices spec.
// A GPU still unknown is said to be so: no share of any roof is printed (never a default
// GPU's), though a DRAM peak the export implies still gives the share of bandwidth.
// What was not collected is never read as zero: no FLOP counter means "FLOPs not
// collected", and a missing unit throughput leaves the limiter unknown unless the unit
// that was collected is past ncu's own speed-of-light line (80%).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiling/device_spec.h"
#include "profiling/trace/ncu_reader.h"
#include "profiling/model/roofline.h"

namespace decodelab {

// What one launch's metrics say, in base units; nullopt where the export lacks it.
struct NcuKernelInputs {
  std::optional<double> duration_seconds;
  std::string duration_source;                       // which metrics gave the duration
  std::optional<double> flops;                       // all precisions; nullopt: no FLOP counter collected
  std::array<double, 4> flops_by_precision{};        // the roof each FLOP meets, by Precision (fp32, tf32, fp16, bf16)
  double fp64_flops = 0;                             // CUDA-core and tensor fp64 (the fp64 roof)
  // What the FLOPs were, in the export's precisions: "fp32", "fp64", "fp16", "bf16 tensor"...
  std::vector<std::pair<std::string, double>> flops_by_label;
  std::optional<double> dram_bytes;
  std::string dram_bytes_source;                     // which metrics gave the bytes
  std::optional<double> sm_throughput_pct;
  std::optional<double> memory_throughput_pct;
  std::optional<double> dram_throughput_pct;         // DRAM alone, % of its peak
  std::optional<double> achieved_occupancy_pct;
  std::optional<double> sectors_per_request;
};

struct NcuKernelReading {
  std::string id;
  std::string kernel;
  std::string device_name;  // as the export names it ("" when it does not)
  std::string device_spec;  // the configs/devices spec it was read against ("" when unknown)
  double peak_flops = 0;    // the kernel's FLOP roof (its precision mix)
  double peak_bandwidth = 0;
  NcuKernelInputs inputs;
  std::optional<KernelReading> reading;  // none without a duration
  bool limiter_known = false;            // the unit throughputs (or a fallback) were there
  std::optional<double> roof_share;      // achieved ÷ roof; nullopt when no roof applies
  std::vector<std::string> lines;        // the reading, in the seed's words
  std::vector<std::string> notes;        // what was missing or derived, and what that means
};

struct NcuDeviceChoice {
  std::string spec;    // device spec name; "" when the GPU is unknown
  std::string reason;  // "--device", "the export's device name ...", "unknown: ..."
  Roofs roofs;         // unknown GPU: no FLOP roofs; a bandwidth only where the export implies one
  std::string origin;  // "datasheet", "measured", "the export" or "none"
  bool known() const { return !spec.empty(); }
};

struct NcuReport {
  static constexpr int kSchemaVersion = 2;
  std::string file;
  NcuForm form = NcuForm::Wide;
  std::vector<NcuDeviceChoice> devices;  // every spec used, once
  std::vector<NcuKernelReading> kernels;
  // Metrics whose absence left something unread, and the command that collects them all.
  std::vector<std::string> missing_metrics;
};

struct NcuReadingOptions {
  std::optional<DeviceSpec> device;  // --device; otherwise identified from the export, or unknown
  LimiterThresholds thresholds;
  // A unit collected alone decides the limiter from this share of its peak: ncu's
  // speed-of-light rule calls a unit above 80% the bottleneck.
  double lone_unit_fraction = 0.80;
  // A spec whose datasheet bandwidth lies within this share of the DRAM peak the export
  // implies matches it: the percentage and the datasheet agree to a few percent (ncu's peak
  // is the sustained one at the recorded memory clock), while the GPUs of one compute
  // capability differ by more (an L40S's 864 GB/s against an RTX 4090's 1008).
  double bandwidth_match_fraction = 0.10;
};

// The inputs one launch provides (FLOPs summed per precision, bytes with their fallbacks).
NcuKernelInputs kernel_inputs(const NcuLaunch& launch, std::vector<std::string>* notes = nullptr);

NcuReport read_ncu_report(const NcuExport& exported, const NcuReadingOptions& options = {});

// "ncu --metrics a,b,c --csv <your program>": the line that collects `metrics`.
std::string ncu_collect_command(const std::vector<std::string>& metrics);

std::string format_ncu_report(const NcuReport& report);
nlohmann::json to_json(const NcuReport& report);

}  // namespace decodelab
