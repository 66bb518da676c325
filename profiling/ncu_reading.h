// The seed's reading discipline applied to an Nsight Compute export: per profiled launch,
// the three numbers (duration, FLOPs, DRAM bytes), then intensity, achieved rate, % of
// roof, SM% vs memory%, occupancy, sectors per request and the limiter with its advice —
// all through read_kernel_report (profiling/roofline.h), so the words are the seed's.
//
// FLOPs come from the counters Nsight Compute's roofline sections use: per precision
// add + mul + 2·fma thread instructions (sm__sass_thread_inst_executed_op_{f,h,d}{add,mul,fma}
// _pred_on.sum), plus tensor-pipe operations (sm__ops_path_tensor_src_{fp16,bf16_dst_fp32,
// tf32_dst_fp32,fp64}.sum, which count FLOPs themselves).
// Non-obvious choice: each precision's FLOPs are held to their own roof and the kernel's
// peak is the resulting harmonic mix (FLOPs ÷ Σ FLOPs_p/peak_p), so a GEMM's bf16 tensor
// work meets the 989 TFLOP/s roof while its fp32 epilogue meets the 67 TFLOP/s one. CUDA-core
// fp16 and fp64 instructions are held to the fp32 roof: device files carry no such peaks.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiling/device_spec.h"
#include "profiling/ncu_reader.h"
#include "profiling/roofline.h"

namespace decodelab {

// What one launch's metrics say, in base units; nullopt where the export lacks it.
struct NcuKernelInputs {
  std::optional<double> duration_seconds;
  std::optional<double> flops;                       // all precisions
  std::array<double, 4> flops_by_precision{};        // indexed by Precision (fp32, tf32, fp16, bf16)
  std::optional<double> dram_bytes;
  std::string dram_bytes_source;                     // which metrics gave the bytes
  std::optional<double> sm_throughput_pct;
  std::optional<double> memory_throughput_pct;
  std::optional<double> achieved_occupancy_pct;
  std::optional<double> sectors_per_request;
};

struct NcuKernelReading {
  std::string id;
  std::string kernel;
  std::string device_name;  // as the export names it ("" when it does not)
  std::string device_spec;  // the configs/devices spec it was read against
  double peak_flops = 0;    // the kernel's FLOP roof (its precision mix)
  double peak_bandwidth = 0;
  NcuKernelInputs inputs;
  std::optional<KernelReading> reading;  // none without a duration
  bool limiter_known = false;            // the unit throughputs (or a fallback) were there
  std::vector<std::string> lines;        // the reading, in the seed's words
  std::vector<std::string> notes;        // what was missing or derived, and what that means
};

struct NcuDeviceChoice {
  std::string spec;    // device spec name
  std::string reason;  // "--device", "the export's device name ...", "default ..."
  Roofs roofs;
  std::string origin;  // "datasheet", "measured", ...
};

struct NcuReport {
  static constexpr int kSchemaVersion = 1;
  std::string file;
  NcuForm form = NcuForm::Wide;
  std::vector<NcuDeviceChoice> devices;  // every spec used, once
  std::vector<NcuKernelReading> kernels;
};

struct NcuReadingOptions {
  std::optional<DeviceSpec> device;  // --device; otherwise the export's device name, else h100-sxm
  std::string default_device = "h100-sxm";
  LimiterThresholds thresholds;
};

// The inputs one launch provides (FLOPs summed per precision, bytes with their fallbacks).
NcuKernelInputs kernel_inputs(const NcuLaunch& launch, std::vector<std::string>* notes = nullptr);

NcuReport read_ncu_report(const NcuExport& exported, const NcuReadingOptions& options = {});

std::string format_ncu_report(const NcuReport& report);
nlohmann::json to_json(const NcuReport& report);

}  // namespace decodelab
