// Launch metrics -> KernelReport -> read_kernel_report, with the fallbacks a partial
// export needs, each one said in a note. Text is the seed's (roofline.cpp); this file adds
// only what the export itself lacked.
#include "profiling/ncu_reading.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "profiling/text_table.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

size_t slot(Precision precision) { return static_cast<size_t>(precision); }

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

template <typename... Args>
std::string ncu_format(const char* pattern, Args... args) {
  char buffer[320];
  std::snprintf(buffer, sizeof buffer, pattern, args...);
  return buffer;
}

std::string precision_mix(const NcuKernelInputs& inputs) {
  std::string mix;
  for (Precision precision : {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16}) {
    if (inputs.flops_by_precision[slot(precision)] > 0) mix += (mix.empty() ? "" : "+") + std::string(precision_name(precision));
  }
  return mix;
}

// The FLOP roof of a kernel's precision mix: its FLOPs over the time they need at their roofs.
double mixed_peak(const NcuKernelInputs& inputs, const Roofs& roofs) {
  double seconds_at_peak = 0;
  for (Precision precision : {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16}) {
    const double flops = inputs.flops_by_precision[slot(precision)];
    if (flops > 0 && roofs.flops(precision) > 0) seconds_at_peak += flops / roofs.flops(precision);
  }
  if (!inputs.flops || *inputs.flops <= 0 || seconds_at_peak <= 0) return roofs.flops(Precision::Bf16);  // the seed's single peak
  return *inputs.flops / seconds_at_peak;
}

class DeviceResolver {
 public:
  DeviceResolver(const NcuReadingOptions& options, NcuReport& report) : options_(options), report_(report) {}

  // The spec a launch is read against, its index in report.devices.
  size_t resolve(const std::string& device_name) {
    auto cached = by_name_.find(device_name);
    if (cached != by_name_.end()) return cached->second;
    DeviceSpec spec;
    std::string reason;
    if (options_.device) {
      spec = *options_.device;
      reason = "--device";
    } else if (std::optional<DeviceSpec> matched = device_name.empty() ? std::nullopt : match_device_spec(device_name)) {
      spec = *matched;
      reason = "the export's device name \"" + device_name + "\"";
    } else {
      spec = find_device_spec(options_.default_device);
      reason = device_name.empty() ? "default: the export names no device (pass --device NAME)"
                                   : "default: the export's device \"" + device_name +
                                         "\" matches no configs/devices spec (pass --device NAME)";
    }
    size_t index = report_.devices.size();
    for (size_t i = 0; i < report_.devices.size(); ++i) {
      if (report_.devices[i].spec == spec.name && report_.devices[i].reason == reason) index = i;
    }
    if (index == report_.devices.size()) {
      report_.devices.push_back({spec.name, reason, spec.effective_roofs(), spec.roofs_origin()});
    }
    by_name_[device_name] = index;
    return index;
  }

 private:
  const NcuReadingOptions& options_;
  NcuReport& report_;
  std::map<std::string, size_t> by_name_;
};

NcuKernelReading read_launch(const NcuLaunch& launch, const NcuDeviceChoice& device, const LimiterThresholds& thresholds) {
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
    kernel.lines.push_back("cannot read: no kernel duration (gpu__time_duration.sum) in the export");
    return kernel;
  }

  KernelReport report;
  report.kernel = launch.kernel;
  report.duration_us = *inputs.duration_seconds * 1e6;
  report.flops = inputs.flops.value_or(0);
  report.dram_bytes = inputs.dram_bytes.value_or(0);
  report.achieved_occupancy_pct = inputs.achieved_occupancy_pct;
  report.sectors_per_request = inputs.sectors_per_request;
  const bool has_units = inputs.sm_throughput_pct && inputs.memory_throughput_pct;
  const bool has_work = inputs.flops || inputs.dram_bytes;
  kernel.limiter_known = has_units || has_work;
  if (has_units) {
    report.sm_throughput_pct = *inputs.sm_throughput_pct;
    report.memory_throughput_pct = *inputs.memory_throughput_pct;
  } else if (has_work) {
    // The units' own counters are missing: achieved ÷ peak stands in for them (DRAM only,
    // so a cache-bound kernel reads lower than ncu's memory throughput would).
    const double seconds = *inputs.duration_seconds;
    report.sm_throughput_pct = inputs.sm_throughput_pct.value_or(
        seconds > 0 && kernel.peak_flops > 0 ? report.flops / seconds / kernel.peak_flops * 100.0 : 0.0);
    report.memory_throughput_pct = inputs.memory_throughput_pct.value_or(
        seconds > 0 && kernel.peak_bandwidth > 0 ? report.dram_bytes / seconds / kernel.peak_bandwidth * 100.0 : 0.0);
    kernel.notes.push_back("SM and memory throughput (the SpeedOfLight section) are not both in the export: the unit "
                           "verdict uses achieved FLOP/s and DRAM bandwidth over the device's peaks instead");
  }
  kernel.reading = read_kernel_report(report, kernel.peak_flops, kernel.peak_bandwidth, thresholds);
  kernel.lines = kernel.reading->lines;
  // read_kernel_report places the kernel first, then the tiny-kernel finding, then the rest.
  if (!inputs.dram_bytes) {
    kernel.lines[0] = inputs.flops ? ncu_format("%s over %s; no DRAM bytes (dram__bytes_read.sum, dram__bytes_write.sum) in "
                                            "the export: intensity unknown",
                                            format_flop_rate(kernel.reading->achieved_flops).c_str(),
                                            format_seconds(*inputs.duration_seconds).c_str())
                                   : "no FLOPs and no DRAM bytes in the export: cannot place it on the roofline";
  }
  if (!kernel.limiter_known) {
    std::vector<std::string> kept = {kernel.lines[0]};
    if (kernel.reading->tiny) kept.push_back(kernel.lines[1]);
    kept.push_back("no throughput metrics in the export: the limiter is unknown (collect the SpeedOfLight section)");
    kernel.lines = std::move(kept);
  }
  return kernel;
}

std::string optional_cell(const std::optional<double>& value, std::string (*formatter)(double)) {
  return value ? formatter(*value) : std::string("-");
}

std::string percent_text(double percent) { return ncu_format("%.0f%%", percent); }

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

NcuKernelInputs kernel_inputs(const NcuLaunch& launch, std::vector<std::string>* notes) {
  auto note = [&](const std::string& text) {
    if (notes) notes->push_back(text);
  };
  NcuKernelInputs inputs;
  inputs.duration_seconds = launch.value(ncu_metric::kDuration);

  struct Source {
    std::optional<double> flops;
    Precision roof;
  };
  const Source sources[] = {
      {sass_flops(launch, 'f'), Precision::Fp32},
      {sass_flops(launch, 'h'), Precision::Fp32},  // CUDA-core fp16: no such roof in device files
      {sass_flops(launch, 'd'), Precision::Fp32},  // fp64: likewise
      {tensor_fp16_flops(launch), Precision::Fp16},
      {launch.value(ncu_metric::kTensorBf16), Precision::Bf16},
      {launch.value(ncu_metric::kTensorTf32), Precision::Tf32},
      {launch.value(ncu_metric::kTensorFp64), Precision::Fp32},
  };
  for (const Source& source : sources) {
    if (!source.flops) continue;
    inputs.flops = inputs.flops.value_or(0) + *source.flops;
    inputs.flops_by_precision[slot(source.roof)] += *source.flops;
  }
  if (sass_flops(launch, 'h').value_or(0) > 0 || sass_flops(launch, 'd').value_or(0) > 0) {
    note("CUDA-core fp16/fp64 instructions are held to the fp32 roof (device files carry no such peaks)");
  }
  if (const auto fp8 = launch.value(ncu_metric::kTensorFp8); fp8.value_or(0) > 0) {
    note("fp8 tensor operations (" + format_flops(*fp8) + ") are not counted: device files carry no fp8 roof");
  }
  if (!inputs.flops && launch.value(ncu_metric::kTensorInstructions).value_or(0) > 0) {
    note("tensor instructions ran but no sm__ops_path_tensor_* counters were collected: FLOPs are unknown");
  }

  const auto read = launch.value(ncu_metric::kDramRead);
  const auto write = launch.value(ncu_metric::kDramWrite);
  if (read && write) {
    inputs.dram_bytes = *read + *write;
    inputs.dram_bytes_source = "dram__bytes_read.sum + dram__bytes_write.sum";
  } else if (read || write) {
    inputs.dram_bytes = read ? *read : *write;
    inputs.dram_bytes_source = read ? ncu_metric::kDramRead : ncu_metric::kDramWrite;
    note(std::string("only ") + inputs.dram_bytes_source + " is in the export: DRAM bytes are undercounted");
  } else if (const auto total = launch.value(ncu_metric::kDramTotal)) {
    inputs.dram_bytes = *total;
    inputs.dram_bytes_source = ncu_metric::kDramTotal;
  } else if (const auto rate = launch.value(ncu_metric::kDramRate); rate && inputs.duration_seconds) {
    inputs.dram_bytes = *rate * *inputs.duration_seconds;
    inputs.dram_bytes_source = "dram__bytes.sum.per_second × duration";
  }

  inputs.sm_throughput_pct = launch.value(ncu_metric::kSmThroughput);
  inputs.memory_throughput_pct = launch.value(ncu_metric::kMemoryThroughput);
  inputs.achieved_occupancy_pct = launch.value(ncu_metric::kOccupancy);
  const auto sectors = launch.value(ncu_metric::kLoadSectors);
  const auto requests = launch.value(ncu_metric::kLoadRequests);
  if (sectors && requests && *requests > 0) inputs.sectors_per_request = *sectors / *requests;

  for (const auto& [metric, value] : launch.metrics) {
    if (!value.value) note(metric + " is n/a in the export (not collectable on this GPU)");
  }
  return inputs;
}

NcuReport read_ncu_report(const NcuExport& exported, const NcuReadingOptions& options) {
  NcuReport report;
  report.file = exported.file;
  report.form = exported.form;
  DeviceResolver devices(options, report);
  for (const NcuLaunch& launch : exported.launches) {
    const size_t device = devices.resolve(launch.device_name);
    report.kernels.push_back(read_launch(launch, report.devices[device], options.thresholds));
  }
  return report;
}

std::string format_ncu_report(const NcuReport& report) {
  std::ostringstream out;
  out << "ncu export " << report.file << ": " << ncu_form_name(report.form) << ", " << report.kernels.size()
      << (report.kernels.size() == 1 ? " launch\n" : " launches\n");
  for (const NcuDeviceChoice& device : report.devices) {
    out << "device " << device.spec << " (" << device.reason << "): " << device.origin << " roofs "
        << format_bandwidth(device.roofs.bandwidth) << ", fp32 " << format_flop_rate(device.roofs.flops(Precision::Fp32))
        << ", bf16 " << format_flop_rate(device.roofs.flops(Precision::Bf16)) << "\n";
  }

  for (const NcuKernelReading& kernel : report.kernels) {
    const NcuKernelInputs& in = kernel.inputs;
    out << "\n" << kernel.kernel << "  [ID " << kernel.id << "]\n";
    std::string measured = optional_cell(in.duration_seconds, format_seconds);
    if (in.flops) measured += ", " + format_flops(*in.flops) + (precision_mix(in).empty() ? "" : " (" + precision_mix(in) + ")");
    if (in.dram_bytes) measured += ", " + format_bytes(*in.dram_bytes) + " of DRAM";
    std::string units;
    if (in.sm_throughput_pct) units += "SM " + percent_text(*in.sm_throughput_pct);
    if (in.memory_throughput_pct) units += (units.empty() ? "" : ", ") + std::string("memory ") + percent_text(*in.memory_throughput_pct);
    if (in.achieved_occupancy_pct) units += (units.empty() ? "" : ", ") + std::string("occupancy ") + percent_text(*in.achieved_occupancy_pct);
    if (in.sectors_per_request) units += (units.empty() ? "" : ", ") + ncu_format("%.1f sectors/request", *in.sectors_per_request);
    out << "    " << measured << (units.empty() ? "" : "; " + units) << "\n";
    for (const std::string& line : kernel.lines) out << "    " << line << "\n";
    for (const std::string& note : kernel.notes) out << "    note: " << note << "\n";
  }

  TextTable table({"kernel", "ID", "duration", "intensity", "achieved", "% of roof", "limiter"});
  for (const NcuKernelReading& kernel : report.kernels) {
    const std::optional<KernelReading>& reading = kernel.reading;
    const bool placed = reading && kernel.inputs.dram_bytes;
    const bool flop_view = placed && reading->intensity >= 1.0;
    table.add({truncated(kernel.kernel, 48), kernel.id, optional_cell(kernel.inputs.duration_seconds, format_seconds),
               placed ? format_number(reading->intensity, 3) + " FLOP/B" : "-",
               placed ? (flop_view ? format_flop_rate(reading->achieved_flops) : format_bandwidth(reading->achieved_bandwidth)) : "-",
               placed ? format_percent(reading->roof_fraction) : "-",
               reading && kernel.limiter_known ? limiter_name(reading->limiter) : "unknown"});
  }
  out << "\nsummary\n" << table.str();
  return out.str();
}

nlohmann::json to_json(const NcuReport& report) {
  nlohmann::json devices = nlohmann::json::array();
  for (const NcuDeviceChoice& device : report.devices) {
    devices.push_back({{"spec", device.spec}, {"reason", device.reason}, {"origin", device.origin}, {"roofs", to_json(device.roofs)}});
  }
  nlohmann::json kernels = nlohmann::json::array();
  for (const NcuKernelReading& kernel : report.kernels) {
    const NcuKernelInputs& in = kernel.inputs;
    nlohmann::json by_precision = nlohmann::json::object();
    for (Precision precision : {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16}) {
      by_precision[precision_name(precision)] = in.flops_by_precision[slot(precision)];
    }
    nlohmann::json inputs = {{"duration_s", optional_json(in.duration_seconds)},
                             {"flops", optional_json(in.flops)},
                             {"flops_by_roof", by_precision},
                             {"dram_bytes", optional_json(in.dram_bytes)},
                             {"dram_bytes_source", in.dram_bytes_source},
                             {"sm_throughput_pct", optional_json(in.sm_throughput_pct)},
                             {"memory_throughput_pct", optional_json(in.memory_throughput_pct)},
                             {"achieved_occupancy_pct", optional_json(in.achieved_occupancy_pct)},
                             {"sectors_per_request", optional_json(in.sectors_per_request)}};
    nlohmann::json reading = nullptr;
    if (kernel.reading) {
      const KernelReading& r = *kernel.reading;
      const bool placed = in.dram_bytes.has_value();
      reading = {{"intensity_flop_per_byte", placed ? nlohmann::json(r.intensity) : nlohmann::json(nullptr)},
                 {"achieved_flops_per_s", r.achieved_flops},
                 {"achieved_bytes_per_s", placed ? nlohmann::json(r.achieved_bandwidth) : nlohmann::json(nullptr)},
                 {"roof_flops_per_s", placed ? nlohmann::json(r.roof_flops) : nlohmann::json(nullptr)},
                 {"roof_fraction", placed ? nlohmann::json(r.roof_fraction) : nlohmann::json(nullptr)},
                 {"limiter", kernel.limiter_known ? nlohmann::json(limiter_name(r.limiter)) : nlohmann::json(nullptr)},
                 {"unit_limiter", kernel.limiter_known ? nlohmann::json(limiter_name(r.unit_limiter)) : nlohmann::json(nullptr)},
                 {"tiny", r.tiny},
                 {"uncoalesced", r.uncoalesced},
                 {"low_occupancy", r.low_occupancy}};
    }
    kernels.push_back({{"id", kernel.id},
                       {"kernel", kernel.kernel},
                       {"device_name", kernel.device_name},
                       {"device_spec", kernel.device_spec},
                       {"peak_flops_per_s", kernel.peak_flops},
                       {"peak_bytes_per_s", kernel.peak_bandwidth},
                       {"inputs", inputs},
                       {"reading", reading},
                       {"lines", kernel.lines},
                       {"notes", kernel.notes}});
  }
  return {{"schema", "decodelab-ncu"},
          {"schema_version", NcuReport::kSchemaVersion},
          {"file", report.file},
          {"form", report.form == NcuForm::Wide ? "wide" : "long"},
          {"devices", devices},
          {"kernels", kernels}};
}

}  // namespace decodelab
