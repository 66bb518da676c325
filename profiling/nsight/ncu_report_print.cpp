// Printers for NcuReport: the console text (devices, each launch's numbers and the seed's
// lines, the summary table, what to collect) and the JSON schema "decodelab-ncu". They only
// format; every number comes from read_ncu_report (ncu_reading.cpp).
#include <sstream>

#include "profiling/nsight/ncu_reading.h"
#include "profiling/nsight/ncu_text.h"
#include "profiling/report/text_table.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

using ncu_text::ncu_format;
using ncu_text::ncu_join;
using ncu_text::slot;

std::string flop_labels(const NcuKernelInputs& inputs) {
  std::vector<std::string> labels;
  for (const auto& [label, flops] : inputs.flops_by_label) {
    if (flops > 0) labels.push_back(label);
  }
  return ncu_join(labels, "+");
}

std::string optional_cell(const std::optional<double>& value, std::string (*formatter)(double)) {
  return value ? formatter(*value) : std::string("-");
}

std::string percent_text(double percent) { return ncu_format("%.0f%%", percent); }

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

std::string format_ncu_report(const NcuReport& report) {
  std::ostringstream out;
  out << "ncu export " << report.file << ": " << ncu_form_name(report.form) << ", " << report.kernels.size()
      << (report.kernels.size() == 1 ? " launch\n" : " launches\n");
  for (const NcuDeviceChoice& device : report.devices) {
    if (!device.known()) {
      out << "device " << device.reason;
      if (device.roofs.bandwidth > 0) out << "; shares of the DRAM peak only, no FLOP roof";
      else out << "; no share of any roof is given";
      out << "\n";
      continue;
    }
    out << "device " << device.spec << " (" << device.reason << "): " << device.origin << " roofs "
        << format_bandwidth(device.roofs.bandwidth) << ", fp32 " << format_flop_rate(device.roofs.flops(Precision::Fp32))
        << ", bf16 " << format_flop_rate(device.roofs.flops(Precision::Bf16));
    if (device.roofs.fp64_flops > 0) out << ", fp64 " << format_flop_rate(device.roofs.fp64_flops);
    out << "\n";
  }

  for (const NcuKernelReading& kernel : report.kernels) {
    const NcuKernelInputs& in = kernel.inputs;
    out << "\n" << kernel.kernel << "  [ID " << kernel.id << "]\n";
    std::string measured = optional_cell(in.duration_seconds, format_seconds);
    if (in.flops) {
      measured += ", " + format_flops(*in.flops) + (flop_labels(in).empty() ? "" : " (" + flop_labels(in) + ")");
    } else {
      measured += ", FLOPs not collected";
    }
    if (in.dram_bytes) measured += ", " + format_bytes(*in.dram_bytes) + " of DRAM";
    std::string units;
    if (in.sm_throughput_pct) units += "SM " + percent_text(*in.sm_throughput_pct);
    if (in.memory_throughput_pct) units += (units.empty() ? "" : ", ") + std::string("memory ") + percent_text(*in.memory_throughput_pct);
    if (in.dram_throughput_pct) units += (units.empty() ? "" : ", ") + std::string("DRAM ") + percent_text(*in.dram_throughput_pct);
    if (in.achieved_occupancy_pct) units += (units.empty() ? "" : ", ") + std::string("occupancy ") + percent_text(*in.achieved_occupancy_pct);
    if (in.sectors_per_request) units += (units.empty() ? "" : ", ") + ncu_format("%.1f sectors/request", *in.sectors_per_request);
    out << "    " << measured << (units.empty() ? "" : "; " + units) << "\n";
    for (const std::string& line : kernel.lines) out << "    " << line << "\n";
    for (const std::string& note : kernel.notes) out << "    note: " << note << "\n";
  }

  TextTable table({"kernel", "ID", "duration", "intensity", "achieved", "% of roof", "limiter"});
  for (const NcuKernelReading& kernel : report.kernels) {
    const NcuKernelInputs& in = kernel.inputs;
    const std::optional<KernelReading>& reading = kernel.reading;
    const bool intensity_known = reading && in.flops && in.dram_bytes;
    const bool flop_view = intensity_known && reading->intensity >= 1.0;
    std::string achieved = "-";
    if (reading && flop_view) achieved = format_flop_rate(reading->achieved_flops);
    else if (reading && in.dram_bytes) achieved = format_bandwidth(reading->achieved_bandwidth);
    else if (reading && in.flops) achieved = format_flop_rate(reading->achieved_flops);
    table.add({truncated(kernel.kernel, 48), kernel.id, optional_cell(in.duration_seconds, format_seconds),
               intensity_known ? format_number(reading->intensity, 3) + " FLOP/B" : "-", achieved,
               kernel.roof_share ? format_percent(*kernel.roof_share) : "-",
               reading && kernel.limiter_known ? limiter_name(reading->limiter) : "unknown"});
  }
  out << "\nsummary\n" << table.str();
  if (!report.missing_metrics.empty()) {
    out << "\nnot in the export: " << ncu_join(report.missing_metrics, ", ") << "\ncollect them: "
        << ncu_collect_command(report.missing_metrics) << "\n";
  }
  return out.str();
}

nlohmann::json to_json(const NcuReport& report) {
  nlohmann::json devices = nlohmann::json::array();
  for (const NcuDeviceChoice& device : report.devices) {
    devices.push_back({{"spec", device.known() ? nlohmann::json(device.spec) : nlohmann::json(nullptr)},
                       {"known", device.known()},
                       {"reason", device.reason},
                       {"origin", device.origin},
                       {"roofs", to_json(device.roofs)}});
  }
  nlohmann::json kernels = nlohmann::json::array();
  for (const NcuKernelReading& kernel : report.kernels) {
    const NcuKernelInputs& in = kernel.inputs;
    nlohmann::json by_roof = nlohmann::json::object();
    for (Precision precision : {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16}) {
      by_roof[precision_name(precision)] = in.flops_by_precision[slot(precision)];
    }
    by_roof["fp64"] = in.fp64_flops;
    nlohmann::json by_label = nlohmann::json::object();
    for (const auto& [label, flops] : in.flops_by_label) by_label[label] = flops;
    nlohmann::json inputs = {{"duration_s", optional_json(in.duration_seconds)},
                             {"duration_source", in.duration_source},
                             {"flops", optional_json(in.flops)},
                             {"flops_collected", in.flops.has_value()},
                             {"flops_by_roof", by_roof},
                             {"flops_by_precision", by_label},
                             {"dram_bytes", optional_json(in.dram_bytes)},
                             {"dram_bytes_source", in.dram_bytes_source},
                             {"sm_throughput_pct", optional_json(in.sm_throughput_pct)},
                             {"memory_throughput_pct", optional_json(in.memory_throughput_pct)},
                             {"dram_throughput_pct", optional_json(in.dram_throughput_pct)},
                             {"achieved_occupancy_pct", optional_json(in.achieved_occupancy_pct)},
                             {"sectors_per_request", optional_json(in.sectors_per_request)}};
    nlohmann::json reading = nullptr;
    if (kernel.reading) {
      const KernelReading& r = *kernel.reading;
      const bool intensity_known = in.dram_bytes && in.flops;
      const bool seed_roof = intensity_known && kernel.peak_flops > 0 && kernel.peak_bandwidth > 0;
      reading = {{"intensity_flop_per_byte", intensity_known ? nlohmann::json(r.intensity) : nlohmann::json(nullptr)},
                 {"achieved_flops_per_s", in.flops ? nlohmann::json(r.achieved_flops) : nlohmann::json(nullptr)},
                 {"achieved_bytes_per_s", in.dram_bytes ? nlohmann::json(r.achieved_bandwidth) : nlohmann::json(nullptr)},
                 {"roof_flops_per_s", seed_roof ? nlohmann::json(r.roof_flops) : nlohmann::json(nullptr)},
                 {"roof_fraction", optional_json(kernel.roof_share)},
                 {"limiter", kernel.limiter_known ? nlohmann::json(limiter_name(r.limiter)) : nlohmann::json(nullptr)},
                 {"unit_limiter", kernel.limiter_known ? nlohmann::json(limiter_name(r.unit_limiter)) : nlohmann::json(nullptr)},
                 {"tiny", r.tiny},
                 {"uncoalesced", r.uncoalesced},
                 {"low_occupancy", r.low_occupancy}};
    }
    kernels.push_back({{"id", kernel.id},
                       {"kernel", kernel.kernel},
                       {"device_name", kernel.device_name},
                       {"device_spec", kernel.device_spec.empty() ? nlohmann::json(nullptr) : nlohmann::json(kernel.device_spec)},
                       {"peak_flops_per_s", kernel.peak_flops > 0 ? nlohmann::json(kernel.peak_flops) : nlohmann::json(nullptr)},
                       {"peak_bytes_per_s", kernel.peak_bandwidth > 0 ? nlohmann::json(kernel.peak_bandwidth) : nlohmann::json(nullptr)},
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
          {"kernels", kernels},
          {"missing_metrics", report.missing_metrics},
          {"collect_command", report.missing_metrics.empty() ? nlohmann::json(nullptr)
                                                             : nlohmann::json(ncu_collect_command(report.missing_metrics))}};
}

}  // namespace decodelab
