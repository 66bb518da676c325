// Launch metrics -> KernelReport -> read_kernel_report, with the fallbacks a partial
// export needs, each one said in a note. Text is the seed's (roofline.cpp); this file adds
// only what the export itself lacked, and the device the export was recorded on. The printers
// (text, JSON) are in ncu_report_print.cpp.
#include "profiling/nsight/ncu_reading.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "profiling/nsight/ncu_text.h"
#include "profiling/report/text_table.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

using ncu_text::ncu_format;
using ncu_text::ncu_join;
using ncu_text::slot;

// add + mul + 2·fma of one precision's CUDA-core instructions; nullopt when none was collected.
std::optional<double> sass_flops(const NcuLaunch& launch, char prefix) {
  const auto add = launch.value(ncu_metric::sass_counter(prefix, "add"));
  const auto mul = launch.value(ncu_metric::sass_counter(prefix, "mul"));
  const auto fma = launch.value(ncu_metric::sass_counter(prefix, "fma"));
  if (!add && !mul && !fma) return std::nullopt;
  return add.value_or(0) + mul.value_or(0) + 2.0 * fma.value_or(0);
}

std::optional<double> tensor_fp16_flops(const NcuLaunch& launch) {
  if (const auto all = launch.value(ncu_metric::kTensorFp16)) return all;
  const auto to_fp16 = launch.value(ncu_metric::kTensorFp16ToFp16);
  const auto to_fp32 = launch.value(ncu_metric::kTensorFp16ToFp32);
  if (!to_fp16 && !to_fp32) return std::nullopt;
  return to_fp16.value_or(0) + to_fp32.value_or(0);
}

std::vector<std::string> flop_counters() {
  std::vector<std::string> metrics;
  for (char prefix : {'f', 'h', 'd'}) {
    for (const char* op : {"add", "mul", "fma"}) metrics.push_back(ncu_metric::sass_counter(prefix, op));
  }
  for (const char* tensor : {ncu_metric::kTensorFp16, ncu_metric::kTensorBf16, ncu_metric::kTensorTf32}) metrics.emplace_back(tensor);
  return metrics;
}


// The FLOP roof of a kernel's precision mix: its FLOPs over the time they need at their roofs;
// 0 when the device has no FLOP roof (unknown GPU) or no FLOPs were counted.
double mixed_peak(const NcuKernelInputs& inputs, const Roofs& roofs) {
  if (!roofs.has_any_flops()) return 0.0;
  double seconds_at_peak = 0;
  for (Precision precision : {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16}) {
    const double flops = inputs.flops_by_precision[slot(precision)];
    if (flops > 0 && roofs.flops(precision) > 0) seconds_at_peak += flops / roofs.flops(precision);
  }
  if (inputs.fp64_flops > 0) {
    const double fp64_roof = roofs.fp64_flops > 0 ? roofs.fp64_flops : roofs.flops(Precision::Fp32);
    seconds_at_peak += inputs.fp64_flops / fp64_roof;
  }
  if (!inputs.flops || *inputs.flops <= 0 || seconds_at_peak <= 0) return roofs.flops(Precision::Bf16);  // the seed's single peak
  return *inputs.flops / seconds_at_peak;
}

// What the export says about the GPU it ran on, gathered over the launches of one device.
struct DeviceEvidence {
  std::string name;
  std::string compute_capability;
  std::optional<double> attribute_bandwidth;  // 2 × memory clock × bus width (DDR)
  std::vector<double> implied_bandwidths;     // bytes ÷ duration ÷ DRAM share, per launch

  std::string key() const { return name + "|" + compute_capability; }
};

std::string compute_capability_of(const NcuLaunch& launch) {
  if (!launch.compute_capability.empty()) return launch.compute_capability;
  const auto major = launch.attributes.find(ncu_metric::kComputeCapabilityMajor);
  const auto minor = launch.attributes.find(ncu_metric::kComputeCapabilityMinor);
  if (major == launch.attributes.end() || minor == launch.attributes.end()) return "";
  return std::to_string(static_cast<int>(major->second)) + "." + std::to_string(static_cast<int>(minor->second));
}

double ncu_median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

class DeviceResolver {
 public:
  DeviceResolver(const NcuReadingOptions& options, NcuReport& report) : options_(options), report_(report) {}

  // The index in report.devices of the device each launch ran on.
  std::vector<size_t> resolve(const NcuExport& exported) {
    std::map<std::string, DeviceEvidence> evidence;
    std::vector<std::string> keys;
    for (const NcuLaunch& launch : exported.launches) {
      DeviceEvidence probe{launch.device_name, compute_capability_of(launch), std::nullopt, {}};
      DeviceEvidence& found = evidence.emplace(probe.key(), probe).first->second;
      keys.push_back(probe.key());
      add_bandwidth_evidence(launch, found);
    }
    std::map<std::string, size_t> chosen;
    for (const auto& [key, device] : evidence) chosen[key] = add(choose(device));
    std::vector<size_t> indices;
    for (const std::string& key : keys) indices.push_back(chosen[key]);
    return indices;
  }

 private:
  static void add_bandwidth_evidence(const NcuLaunch& launch, DeviceEvidence& device) {
    const auto clock = launch.attributes.find(ncu_metric::kMemoryClock);
    const auto width = launch.attributes.find(ncu_metric::kMemoryBusWidth);
    if (clock != launch.attributes.end() && width != launch.attributes.end() && clock->second > 0 && width->second > 0) {
      device.attribute_bandwidth = 2.0 * clock->second * 1e3 * width->second / 8.0;
    }
    const NcuKernelInputs inputs = kernel_inputs(launch);
    // Below a few percent the rounded percentage says little about the peak.
    constexpr double kLeastUsefulPercent = 2.0;
    if (inputs.dram_bytes && inputs.duration_seconds && inputs.dram_throughput_pct &&
        *inputs.dram_throughput_pct >= kLeastUsefulPercent && *inputs.duration_seconds > 0) {
      device.implied_bandwidths.push_back(*inputs.dram_bytes / *inputs.duration_seconds / (*inputs.dram_throughput_pct / 100.0));
    }
  }

  NcuDeviceChoice from_spec(const DeviceSpec& spec, const std::string& reason) const {
    return {spec.name, reason, spec.effective_roofs(), spec.roofs_origin()};
  }

  NcuDeviceChoice choose(const DeviceEvidence& device) const {
    if (options_.device) return from_spec(*options_.device, "--device");
    if (!device.name.empty()) {
      if (const std::optional<DeviceSpec> matched = match_device_spec(device.name)) {
        return from_spec(*matched, "the export's device name \"" + device.name + "\"");
      }
    }
    std::string said = device.name.empty() ? "the export names no device" : "the export's device \"" + device.name + "\" matches no configs/devices spec by name";
    if (!device.compute_capability.empty()) said += ", compute capability " + device.compute_capability;
    std::optional<double> bandwidth;
    std::string bandwidth_source;
    if (device.attribute_bandwidth) {
      bandwidth = device.attribute_bandwidth;
      bandwidth_source = "memory clock × bus width";
    } else if (!device.implied_bandwidths.empty()) {
      bandwidth = ncu_median(device.implied_bandwidths);
      bandwidth_source = "DRAM bytes ÷ duration ÷ DRAM throughput %";
    }
    if (!bandwidth) {
      return {"", "unknown: " + said + " and no DRAM peak can be derived from it (pass --device NAME)", Roofs{}, "none"};
    }
    said += ", DRAM peak " + format_bandwidth(*bandwidth) + " (" + bandwidth_source + ")";
    std::vector<DeviceSpec> candidates;
    for (const std::string& name : list_device_specs()) {
      DeviceSpec spec;
      try {
        spec = find_device_spec(name);
      } catch (const std::exception&) {
        continue;  // a broken file is reported by `decodelab list`, not here
      }
      if (!spec.datasheet || spec.datasheet->bandwidth <= 0 || spec.compute_capability.empty()) continue;
      if (!device.compute_capability.empty() && spec.compute_capability != device.compute_capability) continue;
      if (std::fabs(spec.datasheet->bandwidth / *bandwidth - 1.0) <= options_.bandwidth_match_fraction) candidates.push_back(spec);
    }
    // Without a compute capability, a bandwidth alone could be any of several generations.
    if (candidates.size() == 1 && !device.compute_capability.empty()) return from_spec(candidates[0], said);
    Roofs roofs;
    roofs.bandwidth = *bandwidth;
    roofs.source = "the export: " + bandwidth_source;
    std::string why = candidates.empty() ? "matches no configs/devices spec" : "";
    if (!candidates.empty()) {
      std::vector<std::string> names;
      for (const DeviceSpec& spec : candidates) names.push_back(spec.name);
      why = device.compute_capability.empty() ? "could be " + ncu_join(names, " or ") + " (no compute capability to tell)"
                                              : "matches several specs (" + ncu_join(names, ", ") + ")";
    }
    return {"", "unknown: " + said + " " + why + "; only the DRAM peak is known (pass --device NAME)", roofs, "the export"};
  }

  size_t add(const NcuDeviceChoice& choice) {
    for (size_t i = 0; i < report_.devices.size(); ++i) {
      if (report_.devices[i].spec == choice.spec && report_.devices[i].reason == choice.reason) return i;
    }
    report_.devices.push_back(choice);
    return report_.devices.size() - 1;
  }

  const NcuReadingOptions& options_;
  NcuReport& report_;
};

// Where a kernel sits, in words, when the seed's line does not apply as printed.
std::string placement_line(const NcuKernelReading& kernel, const NcuDeviceChoice& device, double seconds) {
  const NcuKernelInputs& in = kernel.inputs;
  const double bandwidth = in.dram_bytes ? *in.dram_bytes / seconds : 0.0;
  std::string bandwidth_text;
  if (in.dram_bytes) {
    bandwidth_text = ncu_format("%.2f TB/s of DRAM", bandwidth / 1e12);
    if (device.roofs.bandwidth > 0) {
      bandwidth_text += ncu_format(" -> %.0f%% of peak bandwidth", bandwidth / device.roofs.bandwidth * 100.0);
      if (!device.known()) bandwidth_text += " (the export's own DRAM peak)";
    }
  }
  if (!in.flops) {
    if (!in.dram_bytes) return "FLOPs not collected and no DRAM bytes in the export: cannot place it on the roofline";
    return bandwidth_text + "; FLOPs not collected: intensity unknown";
  }
  const std::string flop_rate = format_flop_rate(*in.flops / seconds);
  if (!in.dram_bytes) {
    return ncu_format("%s over %s; no DRAM bytes (dram__bytes_read.sum, dram__bytes_write.sum) in the export: intensity unknown",
                      flop_rate.c_str(), format_seconds(seconds).c_str());
  }
  // FLOPs and bytes, on a GPU without FLOP roofs.
  const double intensity = *in.dram_bytes > 0 ? *in.flops / *in.dram_bytes : 0.0;
  return flop_rate + " at " + format_number(intensity, 3) + " FLOP/B, " + bandwidth_text + "; GPU unknown: no FLOP roof";
}

NcuKernelReading read_launch(const NcuLaunch& launch, const NcuDeviceChoice& device, const NcuReadingOptions& options,
                             std::set<std::string>& missing) {
  const LimiterThresholds& thresholds = options.thresholds;
  NcuKernelReading kernel;
  kernel.id = launch.id;
  kernel.kernel = launch.kernel;
  kernel.device_name = launch.device_name;
  kernel.device_spec = device.spec;
  kernel.inputs = kernel_inputs(launch, &kernel.notes);
  const NcuKernelInputs& inputs = kernel.inputs;
  kernel.peak_flops = mixed_peak(inputs, device.roofs);
  kernel.peak_bandwidth = device.roofs.bandwidth;
  if (!inputs.duration_seconds) {
    missing.insert(ncu_metric::kDuration);
    kernel.lines.push_back("cannot read: no kernel duration (gpu__time_duration.sum, or sm__cycles_elapsed.avg with "
                           "sm__cycles_elapsed.avg.per_second) in the export; collect it: " +
                           ncu_collect_command({ncu_metric::kDuration}));
    return kernel;
  }
  if (!inputs.flops) {
    for (const std::string& metric : flop_counters()) missing.insert(metric);
  }
  if (!inputs.dram_bytes) {
    missing.insert(ncu_metric::kDramRead);
    missing.insert(ncu_metric::kDramWrite);
  }

  const double seconds = *inputs.duration_seconds;
  const bool flop_roof = kernel.peak_flops > 0;
  const bool bandwidth_roof = kernel.peak_bandwidth > 0;
  // Each unit's share of its peak: ncu's own percentage, else achieved over a known roof.
  std::optional<double> compute = inputs.sm_throughput_pct ? std::optional<double>(*inputs.sm_throughput_pct / 100.0) : std::nullopt;
  std::optional<double> memory = inputs.memory_throughput_pct ? std::optional<double>(*inputs.memory_throughput_pct / 100.0) : std::nullopt;
  std::vector<std::string> stand_ins;
  if (!memory && inputs.dram_throughput_pct) {
    memory = *inputs.dram_throughput_pct / 100.0;
    stand_ins.push_back("DRAM throughput stands in for memory throughput (it leaves out the caches)");
  }
  if (!compute && inputs.flops && flop_roof && seconds > 0) {
    compute = *inputs.flops / seconds / kernel.peak_flops;
    stand_ins.push_back("achieved FLOP/s over the device's peak stands in for SM throughput");
  }
  if (!memory && inputs.dram_bytes && bandwidth_roof && seconds > 0) {
    memory = *inputs.dram_bytes / seconds / kernel.peak_bandwidth;
    stand_ins.push_back("achieved DRAM bandwidth over the peak stands in for memory throughput (a cache-bound kernel reads lower)");
  }
  if (!stand_ins.empty()) {
    kernel.notes.push_back("SM and memory throughput (the SpeedOfLight section) are not both in the export: " + ncu_join(stand_ins, "; "));
  }

  KernelReport report;
  report.kernel = launch.kernel;
  report.duration_us = seconds * 1e6;
  report.flops = inputs.flops.value_or(0);
  report.dram_bytes = inputs.dram_bytes.value_or(0);
  report.achieved_occupancy_pct = inputs.achieved_occupancy_pct;
  report.sectors_per_request = inputs.sectors_per_request;
  report.sm_throughput_pct = compute.value_or(0) * 100.0;
  report.memory_throughput_pct = memory.value_or(0) * 100.0;
  // Peaks of 0 would print infinite shares: the seed's line is replaced below in that case.
  kernel.reading = read_kernel_report(report, flop_roof ? kernel.peak_flops : 1.0, bandwidth_roof ? kernel.peak_bandwidth : 1.0,
                                      thresholds);
  KernelReading& reading = *kernel.reading;
  kernel.lines = reading.lines;

  // read_kernel_report places the kernel first, then the tiny-kernel finding, then the rest.
  const bool seed_placement = inputs.flops && inputs.dram_bytes && flop_roof && bandwidth_roof;
  if (!seed_placement) kernel.lines[0] = placement_line(kernel, device, seconds);
  if (seed_placement) {
    kernel.roof_share = reading.roof_fraction;
  } else if (inputs.dram_bytes && bandwidth_roof && (!inputs.flops || reading.intensity < thresholds.bandwidth_view_below_intensity)) {
    kernel.roof_share = *inputs.dram_bytes / seconds / kernel.peak_bandwidth;
  }
  if (!seed_placement) reading.roof_fraction = kernel.roof_share.value_or(0);

  const bool both_units = compute && memory;
  const std::optional<double> lone = compute ? compute : memory;
  const bool lone_decides = !both_units && lone && *lone >= options.lone_unit_fraction;
  kernel.limiter_known = both_units || lone_decides || reading.tiny;
  if (lone_decides) {
    const std::string unit = compute ? "SM" : "memory";
    kernel.notes.push_back(ncu_format("%s throughput %.0f%% is past ncu's speed-of-light line (%.0f%%): %s-bound by ncu's own "
                                      "reading, though the %s throughput was not collected",
                                      unit.c_str(), *lone * 100.0, options.lone_unit_fraction * 100.0,
                                      compute ? "compute" : "memory", compute ? "memory" : "SM"));
  }
  if (!both_units && !lone_decides) {
    std::vector<std::string> absent;
    if (!compute) absent.push_back(ncu_metric::kSmThroughput);
    if (!memory) absent.push_back(ncu_metric::kMemoryThroughput);
    for (const std::string& metric : absent) missing.insert(metric);
    std::vector<std::string> kept = {kernel.lines[0]};
    if (reading.tiny) kept.push_back(kernel.lines[1]);
    std::string why = ncu_join(absent, " and ") + (absent.size() == 1 ? " is" : " are") + " not in the export";
    if (lone) why += ncu_format(" and the %s throughput collected (%.0f%%) is below ncu's %.0f%% line", compute ? "SM" : "memory",
                                *lone * 100.0, options.lone_unit_fraction * 100.0);
    if (!device.known()) why += "; the GPU is unknown, so no roof stands in";
    kept.push_back((reading.tiny ? "unit limiter unknown: " : "limiter unknown: ") + why + "; collect them: " +
                   ncu_collect_command(absent));
    kernel.lines = std::move(kept);
  }
  return kernel;
}


}  // namespace

std::string ncu_collect_command(const std::vector<std::string>& metrics) {
  return "ncu --metrics " + ncu_join(metrics, ",") + " --csv <your program>";
}

namespace {

// The bytes, unit throughputs, occupancy and coalescing of a launch, after its FLOPs.
template <typename Note>
NcuKernelInputs finish_inputs(const NcuLaunch& launch, NcuKernelInputs& inputs, Note& note) {
  auto either = [&](const char* name, const char* other) -> std::pair<std::optional<double>, std::string> {
    if (const auto value = launch.value(name)) return {value, name};
    if (const auto value = launch.value(other)) return {value, other};
    return {std::nullopt, ""};
  };
  const auto [read, read_name] = either(ncu_metric::kDramRead, ncu_metric::kDramOpRead);
  const auto [write, write_name] = either(ncu_metric::kDramWrite, ncu_metric::kDramOpWrite);
  if (read && write) {
    inputs.dram_bytes = *read + *write;
    inputs.dram_bytes_source = read_name + " + " + write_name;
  } else if (const auto total = launch.value(ncu_metric::kDramTotal)) {
    inputs.dram_bytes = *total;
    inputs.dram_bytes_source = ncu_metric::kDramTotal;
  } else if (read || write) {
    inputs.dram_bytes = read ? *read : *write;
    inputs.dram_bytes_source = read ? read_name : write_name;
    note("only " + inputs.dram_bytes_source + " is in the export: DRAM bytes are undercounted");
  } else if (const auto rate = launch.value(ncu_metric::kDramRate); rate && inputs.duration_seconds) {
    inputs.dram_bytes = *rate * *inputs.duration_seconds;
    inputs.dram_bytes_source = "dram__bytes.sum.per_second × duration";
  }

  inputs.sm_throughput_pct = launch.value(ncu_metric::kSmThroughput);
  inputs.memory_throughput_pct = launch.value(ncu_metric::kMemoryThroughput);
  inputs.dram_throughput_pct = launch.value(ncu_metric::kDramThroughput);
  if (!inputs.dram_throughput_pct) inputs.dram_throughput_pct = launch.value(ncu_metric::kGpuDramThroughput);
  inputs.achieved_occupancy_pct = launch.value(ncu_metric::kOccupancy);
  const auto sectors = launch.value(ncu_metric::kLoadSectors);
  const auto requests = launch.value(ncu_metric::kLoadRequests);
  if (sectors && requests && *requests > 0) inputs.sectors_per_request = *sectors / *requests;

  for (const auto& [metric, value] : launch.metrics) {
    if (!value.value) note(metric + " is n/a in the export (not collectable on this GPU)");
  }
  return inputs;
}

}  // namespace

NcuKernelInputs kernel_inputs(const NcuLaunch& launch, std::vector<std::string>* notes) {
  auto note = [&](const std::string& text) {
    if (notes) notes->push_back(text);
  };
  NcuKernelInputs inputs;
  inputs.duration_seconds = launch.value(ncu_metric::kDuration);
  if (inputs.duration_seconds) {
    inputs.duration_source = ncu_metric::kDuration;
  } else {
    const auto cycles = launch.value(ncu_metric::kSmCycles);
    const auto rate = launch.value(ncu_metric::kSmCycleRate);
    if (cycles && rate && *rate > 0) {
      inputs.duration_seconds = *cycles / *rate;
      inputs.duration_source = "sm__cycles_elapsed.avg ÷ sm__cycles_elapsed.avg.per_second";
      note("the duration is elapsed SM cycles over their rate (gpu__time_duration.sum was not collected)");
    }
  }

  struct Source {
    std::optional<double> flops;
    const char* label;
    std::optional<Precision> roof;  // nullopt: the fp64 roof
  };
  const Source sources[] = {
      {sass_flops(launch, 'f'), "fp32", Precision::Fp32},
      {sass_flops(launch, 'd'), "fp64", std::nullopt},
      {sass_flops(launch, 'h'), "fp16", Precision::Fp32},  // CUDA-core fp16: no such roof in device files
      {tensor_fp16_flops(launch), "fp16 tensor", Precision::Fp16},
      {launch.value(ncu_metric::kTensorBf16), "bf16 tensor", Precision::Bf16},
      {launch.value(ncu_metric::kTensorTf32), "tf32 tensor", Precision::Tf32},
      {launch.value(ncu_metric::kTensorFp64), "fp64 tensor", std::nullopt},
  };
  // Tensor-pipe counters alone say nothing of the CUDA cores' FLOPs (a GEMV's FFMAs): when
  // they are all that was collected, they count only if they saw work, as a lower bound.
  const bool cuda_core_counted = sources[0].flops || sources[1].flops || sources[2].flops;
  double tensor_flops = 0;
  bool tensor_counted = false;
  for (size_t i = 3; i < std::size(sources); ++i) {
    tensor_counted = tensor_counted || sources[i].flops.has_value();
    tensor_flops += sources[i].flops.value_or(0);
  }
  if (!cuda_core_counted && tensor_counted) {
    if (tensor_flops > 0) {
      note("CUDA-core FLOPs (sm__sass_thread_inst_executed_op_*) were not collected: the FLOPs are the tensor pipe's, a lower bound");
    } else {
      note("only tensor-pipe FLOP counters were collected, and they read 0: the CUDA cores' FLOPs were not collected");
      return finish_inputs(launch, inputs, note);
    }
  }
  for (const Source& source : sources) {
    if (!source.flops) continue;
    inputs.flops = inputs.flops.value_or(0) + *source.flops;
    inputs.flops_by_label.emplace_back(source.label, *source.flops);
    if (source.roof) {
      inputs.flops_by_precision[slot(*source.roof)] += *source.flops;
    } else {
      inputs.fp64_flops += *source.flops;
    }
  }
  if (sass_flops(launch, 'h').value_or(0) > 0) {
    note("CUDA-core fp16 instructions are held to the fp32 roof (device files carry no such peak)");
  }
  if (const auto fp8 = launch.value(ncu_metric::kTensorFp8); fp8.value_or(0) > 0) {
    note("fp8 tensor operations (" + format_flops(*fp8) + ") are not counted: device files carry no fp8 roof");
  }
  if (!inputs.flops && launch.value(ncu_metric::kTensorInstructions).value_or(0) > 0) {
    note("tensor instructions ran but no sm__ops_path_tensor_* counters were collected: FLOPs are unknown");
  }

  return finish_inputs(launch, inputs, note);
}

NcuReport read_ncu_report(const NcuExport& exported, const NcuReadingOptions& options) {
  NcuReport report;
  report.file = exported.file;
  report.form = exported.form;
  DeviceResolver devices(options, report);
  const std::vector<size_t> device_of = devices.resolve(exported);
  std::set<std::string> missing;
  for (size_t i = 0; i < exported.launches.size(); ++i) {
    report.kernels.push_back(read_launch(exported.launches[i], report.devices[device_of[i]], options, missing));
  }
  report.missing_metrics.assign(missing.begin(), missing.end());
  return report;
}

}  // namespace decodelab
