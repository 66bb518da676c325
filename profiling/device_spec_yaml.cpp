// Device specs written as YAML: the form `roofline --measure --save` writes,
// read back by device_spec.cpp's loader (the same keys and units: GB/s and GFLOP/s for CPUs,
// TB/s and TFLOP/s for GPUs; figures with six significant digits).
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <initializer_list>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "profiling/atomic_file.h"
#include "profiling/device_spec.h"

namespace decodelab {

namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

// "fp32: 1.2, fp16: 3.4": each positive figure over `scale`, in the order given.
std::string positive_entries(std::initializer_list<std::pair<const char*, double>> entries, double scale) {
  std::string text;
  for (const auto& [key, value] : entries)
    if (value > 0) text += std::string(text.empty() ? "" : ", ") + key + ": " + number(value / scale);
  return text;
}

// "efficiency_table:" with one flow map per row; the defaults as "efficiency:" when given.
void write_efficiency(std::ostringstream& out, const std::string& indent, const Roofs& roofs) {
  if (!roofs.efficiency_source.empty()) {
    out << indent << "efficiency: {flops: " << number(roofs.default_flops_efficiency)
        << ", bytes: " << number(roofs.default_bytes_efficiency) << ", source: " << quoted(roofs.efficiency_source) << "}\n";
  }
  if (roofs.efficiency.empty()) return;
  out << indent << "efficiency_table:\n";
  for (const Efficiency& row : roofs.efficiency) {
    out << indent << "  - {category: " << row.category << ", precision: " << precision_name(row.precision)
        << ", rows_from: " << row.rows_from << ", size_log2: " << row.size_log2 << ", flops: " << number(row.flops)
        << ", bytes: " << number(row.bytes);
    if (!row.timed.empty()) out << ", timed: " << quoted(row.timed);
    out << "}\n";
  }
}

void write_roofs(std::ostringstream& out, const Roofs& roofs, const std::string& indent) {
  // GPUs are quoted in TB/s and TFLOP/s, CPUs in GB/s and GFLOP/s.
  const bool tera = roofs.bandwidth >= 1e12 || roofs.flops(Precision::Fp16) >= 1e13;
  out << indent << "source: " << quoted(roofs.source) << "\n";
  if (roofs.bandwidth > 0) {
    out << indent << (tera ? "memory_bandwidth_tb_s: " : "memory_bandwidth_gb_s: ")
        << number(roofs.bandwidth / (tera ? 1e12 : 1e9)) << "\n";
  }
  if (!roofs.has_any_flops()) return;
  const double scale = tera ? 1e12 : 1e9;
  const std::string peaks = positive_entries(
      {{"fp32", roofs.fp32_flops}, {"tf32", roofs.tf32_flops}, {"fp16", roofs.fp16_flops}, {"bf16", roofs.bf16_flops},
       {"fp64", roofs.fp64_flops}},
      scale);
  out << indent << (tera ? "peak_tflops: {" : "peak_gflops: {") << peaks << "}\n";
  write_efficiency(out, indent, roofs);
}

void write_fixed_costs(std::ostringstream& out, const FixedCosts& costs, const std::string& indent) {
  out << indent << "fixed_costs:\n";
  out << indent << "  source: " << quoted(costs.source) << "\n";
  out << indent << "  host_launch_us: " << number(costs.host_launch * 1e6) << "\n";
  out << indent << "  op_overhead_us: " << number(costs.op_overhead * 1e6) << "\n";
  out << indent << "  sync_round_trip_us: " << number(costs.sync_round_trip * 1e6) << "\n";
  if (costs.parallel_region > 0) out << indent << "  parallel_region_us: " << number(costs.parallel_region * 1e6) << "\n";
  if (costs.host_link_bandwidth > 0) out << indent << "  host_link_gb_s: " << number(costs.host_link_bandwidth / 1e9) << "\n";
}

void write_cache(std::ostringstream& out, const CacheLevel& cache, const std::string& indent) {
  out << indent << "cache:\n";
  out << indent << "  source: " << quoted(cache.source) << "\n";
  out << indent << "  size_mib: " << number(cache.bytes / (1024.0 * 1024.0)) << "\n";
  out << indent << "  bandwidth_gb_s: " << number(cache.bandwidth / 1e9) << "\n";
  if (cache.beyond.empty()) return;
  out << indent << "  beyond:\n";
  for (const CacheHit& point : cache.beyond)
    out << indent << "    - {reuse_mib: " << number(point.reuse_bytes / (1024.0 * 1024.0)) << ", resident: " << number(point.resident)
        << "}\n";
}

void write_quality(std::ostringstream& out, const Roofs& roofs, const std::string& indent) {
  if (roofs.measured_at > 0) {
    const std::time_t at = static_cast<std::time_t>(roofs.measured_at);
    std::tm parts{};
    gmtime_r(&at, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    out << indent << "measured_at: " << text << "\n";
    out << indent << "spread: " << number(roofs.spread) << "\n";
    out << indent << "noisy: " << (roofs.noisy ? "true" : "false") << "\n";
  }
  if (roofs.probe_bandwidth > 0) out << indent << "probe_bandwidth_gb_s: " << number(roofs.probe_bandwidth / 1e9) << "\n";
  if (roofs.core_round_trip_ns > 0) out << indent << "core_round_trip_ns: " << number(roofs.core_round_trip_ns) << "\n";
}

}  // namespace

std::string device_spec_to_yaml(const DeviceSpec& spec) {
  std::ostringstream out;
  out << "# decodelab device roofs" << (spec.description.empty() ? "" : ": " + spec.description) << "\n";
  out << "name: " << quoted(spec.name) << "\n";
  if (!spec.description.empty()) out << "description: " << quoted(spec.description) << "\n";
  if (spec.sm_count > 0) out << "sm_count: " << spec.sm_count << "\n";
  if (!spec.compute_capability.empty()) out << "compute_capability: " << quoted(spec.compute_capability) << "\n";
  if (!spec.match.empty()) {
    out << "match: [";
    for (size_t i = 0; i < spec.match.size(); ++i) out << (i ? ", " : "") << quoted(spec.match[i]);
    out << "]\n";
  }
  if (spec.datasheet) write_roofs(out, *spec.datasheet, "");
  if (spec.fixed_costs) write_fixed_costs(out, *spec.fixed_costs, "");
  if (spec.cache) write_cache(out, *spec.cache, "");
  if (spec.machine) {
    out << "machine:\n  hostname: " << quoted(spec.machine->hostname) << "\n  cpu_model: "
        << quoted(spec.machine->cpu_model) << "\n  threads: " << spec.machine->threads << "\n";
  }
  if (spec.cache_bytes > 0) out << "cache_mb: " << number(spec.cache_bytes / (1024 * 1024)) << "\n";
  if (spec.measured) {
    out << "measured:\n";
    write_roofs(out, *spec.measured, "  ");
    write_quality(out, *spec.measured, "  ");
    if (spec.measured_fixed_costs) write_fixed_costs(out, *spec.measured_fixed_costs, "  ");
    if (spec.measured_cache) write_cache(out, *spec.measured_cache, "  ");
  }
  return out.str();
}

void save_device_spec(const DeviceSpec& spec, const std::filesystem::path& file) {
  save_file_atomically(file, device_spec_to_yaml(spec));
}

}  // namespace decodelab
