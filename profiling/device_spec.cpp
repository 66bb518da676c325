// Device YAML: loading (every key checked, unknown keys refused so a typo never passes
// silently) and lookup by name or CUDA device name (writing: device_spec_yaml.cpp; JSON:
// device_spec_json.cpp).
// Figures are stored in the units people quote (TB/s, TFLOP/s; GB/s, GFLOP/s for CPUs)
// and held in base units (bytes/s, FLOP/s) in memory.
#include "profiling/device_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "engine/base/errors.h"

namespace decodelab {

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::Fp32: return "fp32";
    case Precision::Tf32: return "tf32";
    case Precision::Fp16: return "fp16";
    case Precision::Bf16: return "bf16";
  }
  return "fp32";
}

std::optional<Precision> parse_precision(std::string_view name) {
  if (name == "fp32") return Precision::Fp32;
  if (name == "tf32") return Precision::Tf32;
  if (name == "fp16") return Precision::Fp16;
  if (name == "bf16") return Precision::Bf16;
  return std::nullopt;
}

double Roofs::flops(Precision precision) const {
  double figure = 0;
  switch (precision) {
    case Precision::Fp32: figure = fp32_flops; break;
    case Precision::Tf32: figure = tf32_flops; break;
    case Precision::Fp16: figure = fp16_flops > 0 ? fp16_flops : bf16_flops; break;
    case Precision::Bf16: figure = bf16_flops > 0 ? bf16_flops : fp16_flops; break;
  }
  return figure > 0 ? figure : fp32_flops;
}

double Roofs::ridge_point(Precision precision) const {
  return bandwidth > 0 ? flops(precision) / bandwidth : 0.0;
}

std::string Roofs::age_and_spread(int64_t now_seconds) const {
  if (measured_at <= 0) return "";
  const double age = static_cast<double>(std::max<int64_t>(0, now_seconds - measured_at));
  char text[96];
  if (age < 120) {
    std::snprintf(text, sizeof text, "taken just now");
  } else if (age < 2 * 3600) {
    std::snprintf(text, sizeof text, "taken %.0f min ago", age / 60);
  } else if (age < 2 * 86400) {
    std::snprintf(text, sizeof text, "taken %.0f h ago", age / 3600);
  } else {
    std::snprintf(text, sizeof text, "taken %.0f days ago", age / 86400);
  }
  std::string result = text;
  if (noisy) result += " on a noisy or contended machine";
  std::snprintf(text, sizeof text, ", spread %.0f%%", spread * 100);
  return result + text;
}

Roofs DeviceSpec::effective_roofs() const {
  if (!datasheet && !measured) throw std::logic_error("device spec '" + name + "' has no roofs");
  if (!measured) return *datasheet;
  if (!datasheet) return *measured;
  Roofs merged = *datasheet;
  const Roofs& real = *measured;
  auto take = [](double& slot, double value) {
    if (value > 0) slot = value;
  };
  take(merged.bandwidth, real.bandwidth);
  take(merged.fp32_flops, real.fp32_flops);
  take(merged.tf32_flops, real.tf32_flops);
  // fp16 and bf16 share the tensor units: one measured figure stands for both.
  take(merged.fp16_flops, real.fp16_flops > 0 ? real.fp16_flops : real.bf16_flops);
  take(merged.bf16_flops, real.bf16_flops > 0 ? real.bf16_flops : real.fp16_flops);
  // The table is a measurement's whole: never mixed with a datasheet's defaults.
  if (!real.efficiency.empty()) {
    merged.efficiency = real.efficiency;
    merged.default_flops_efficiency = real.default_flops_efficiency;
    merged.default_bytes_efficiency = real.default_bytes_efficiency;
    merged.efficiency_source = real.efficiency_source;
  }
  merged.source = "measured where measured (" + real.source + "), datasheet otherwise (" + datasheet->source + ")";
  merged.measured_at = real.measured_at;
  merged.spread = real.spread;
  merged.noisy = real.noisy;
  merged.probe_bandwidth = real.probe_bandwidth;
  merged.core_round_trip_ns = real.core_round_trip_ns;
  return merged;
}

std::string DeviceSpec::roofs_provenance(int64_t now_seconds) const {
  const std::string origin = roofs_origin();
  const std::string quality = measured ? measured->age_and_spread(now_seconds) : "";
  return quality.empty() ? origin : origin + " (" + quality + ")";
}

std::string DeviceSpec::roofs_origin() const {
  if (measured && datasheet) return "measured + datasheet";
  return measured ? "measured" : "datasheet";
}

std::optional<FixedCosts> DeviceSpec::effective_fixed_costs() const {
  return measured_fixed_costs ? measured_fixed_costs : fixed_costs;
}

std::optional<CacheLevel> DeviceSpec::effective_cache() const { return measured_cache ? measured_cache : cache; }

double CacheLevel::resident_bytes(double from, double to) const {
  if (to <= from) return 0;
  // The share as a function of reuse distance: 1 up to the capacity, then the measured
  // points joined by straight lines; the integral of each straight piece is a trapezoid.
  double resident = std::max(0.0, std::min(to, bytes) - from);
  double x0 = bytes, y0 = 1.0;
  for (const CacheHit& point : beyond) {
    const double x1 = point.reuse_bytes, y1 = point.resident;
    const double lo = std::max(from, x0), hi = std::min(to, x1);
    if (hi > lo && x1 > x0) {
      auto at = [&](double x) { return y0 + (y1 - y0) * (x - x0) / (x1 - x0); };
      resident += (at(lo) + at(hi)) / 2 * (hi - lo);
    }
    x0 = x1;
    y0 = y1;
  }
  return resident;
}

// ---------------------------------------------------------------------------------------
// YAML reading

namespace {

class SpecReader {
 public:
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key, const std::string& problem) const {
    throw InputError(file_, node.IsDefined() ? node.Mark().line + 1 : 0, key, problem);
  }

  void only_keys(const YAML::Node& map, const std::string& where, const std::set<std::string>& allowed) const {
    if (!map.IsMap()) fail(map, where, "expected a mapping");
    for (const auto& entry : map) {
      const std::string key = entry.first.as<std::string>();
      if (allowed.count(key)) continue;
      std::string expected;
      for (const std::string& name : allowed) expected += (expected.empty() ? "" : ", ") + name;
      fail(entry.first, where.empty() ? key : where + "." + key, "unknown key; expected one of: " + expected);
    }
  }

  std::string text(const YAML::Node& map, const std::string& key, const std::string& path, bool required) const {
    const YAML::Node node = map[key];
    if (!node.IsDefined()) {
      if (required) fail(map, path, "missing; expected a string");
      return "";
    }
    if (!node.IsScalar()) fail(node, path, "expected a string");
    return node.as<std::string>();
  }

  double positive(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) fail(node, path, "expected a positive number");
    double value = 0;
    try {
      value = node.as<double>();
    } catch (const YAML::Exception&) {
      fail(node, path, "expected a positive number, got '" + node.as<std::string>() + "'");
    }
    if (!(value > 0)) fail(node, path, "expected a positive number, got " + node.as<std::string>());
    return value;
  }

  // A time or rate that may be zero (a measured cost below the clock's resolution).
  double non_negative(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) fail(node, path, "expected a number >= 0");
    double value = -1;
    try {
      value = node.as<double>();
    } catch (const YAML::Exception&) {
      fail(node, path, "expected a number >= 0, got '" + node.as<std::string>() + "'");
    }
    if (!(value >= 0)) fail(node, path, "expected a number >= 0, got " + node.as<std::string>());
    return value;
  }

  int count(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) fail(node, path, "expected a whole number");
    try {
      const int value = node.as<int>();
      if (value >= 0) return value;
    } catch (const YAML::Exception&) {
    }
    fail(node, path, "expected a whole number >= 0, got '" + node.as<std::string>() + "'");
  }

  // Bandwidth and FLOP/s of one roof set; `prefix` is "" (datasheet, top level) or "measured".
  Roofs roofs(const YAML::Node& map, const std::string& prefix) const {
    auto path = [&](const std::string& key) { return prefix.empty() ? key : prefix + "." + key; };
    Roofs result;
    result.source = text(map, "source", path("source"), true);
    const YAML::Node tb = map["memory_bandwidth_tb_s"];
    const YAML::Node gb = map["memory_bandwidth_gb_s"];
    if (tb.IsDefined() && gb.IsDefined()) fail(gb, path("memory_bandwidth_gb_s"), "give the bandwidth once (TB/s or GB/s)");
    if (tb.IsDefined()) result.bandwidth = positive(tb, path("memory_bandwidth_tb_s")) * 1e12;
    if (gb.IsDefined()) result.bandwidth = positive(gb, path("memory_bandwidth_gb_s")) * 1e9;
    const YAML::Node tflops = map["peak_tflops"];
    const YAML::Node gflops = map["peak_gflops"];
    if (tflops.IsDefined() && gflops.IsDefined()) fail(gflops, path("peak_gflops"), "give the peaks once (TFLOP/s or GFLOP/s)");
    const YAML::Node peaks = tflops.IsDefined() ? tflops : gflops;
    const double scale = tflops.IsDefined() ? 1e12 : 1e9;
    const std::string peaks_key = path(tflops.IsDefined() ? "peak_tflops" : "peak_gflops");
    if (peaks.IsDefined()) {
      only_keys(peaks, peaks_key, {"fp32", "tf32", "fp16", "bf16", "fp64"});
      for (const auto& entry : peaks) {
        const std::string key = entry.first.as<std::string>();
        const double value = positive(entry.second, peaks_key + "." + key) * scale;
        if (key == "fp64") {
          result.fp64_flops = value;
          continue;
        }
        switch (*parse_precision(key)) {
          case Precision::Fp32: result.fp32_flops = value; break;
          case Precision::Tf32: result.tf32_flops = value; break;
          case Precision::Fp16: result.fp16_flops = value; break;
          case Precision::Bf16: result.bf16_flops = value; break;
        }
      }
    }
    // efficiency: {flops: η, bytes: η, source: "..."}: the share of the peaks this device's
    // kernels reach, for every op (a datasheet device has no table of its own).
    if (const YAML::Node efficiency = map["efficiency"]; efficiency.IsDefined()) {
      const std::string key = path("efficiency");
      if (!efficiency.IsMap()) fail(efficiency, key, "expected {flops: fraction, bytes: fraction, source: text}");
      only_keys(efficiency, key, {"flops", "bytes", "source"});
      auto fraction = [&](const char* name) {
        const YAML::Node node = efficiency[name];
        if (!node.IsDefined()) fail(efficiency, key + "." + name, "missing; expected a fraction of the peak in (0, 1.5]");
        const double value = positive(node, key + "." + name);
        if (value > 1.5) fail(node, key + "." + name, "expected a fraction of the peak in (0, 1.5]");
        return value;
      };
      result.default_flops_efficiency = fraction("flops");
      result.default_bytes_efficiency = fraction("bytes");
      result.efficiency_source = text(efficiency, "source", key + ".source", true);
    }
    // efficiency_table: [{category, precision, rows_from, size_log2, flops, bytes, timed}, ...]
    if (const YAML::Node table = map["efficiency_table"]; table.IsDefined()) {
      const std::string key = path("efficiency_table");
      if (!table.IsSequence()) fail(table, key, "expected a list of {category, precision, rows_from, size_log2, flops, bytes}");
      for (size_t i = 0; i < table.size(); ++i) {
        const YAML::Node row = table[i];
        const std::string row_key = key + "[" + std::to_string(i) + "]";
        if (!row.IsMap()) fail(row, row_key, "expected {category, precision, rows_from, size_log2, flops, bytes}");
        only_keys(row, row_key, {"category", "precision", "rows_from", "size_log2", "flops", "bytes", "timed"});
        Efficiency entry;
        entry.category = text(row, "category", row_key + ".category", false);
        const std::string precision = text(row, "precision", row_key + ".precision", false);
        if (!parse_precision(precision)) fail(row["precision"], row_key + ".precision", "expected fp32, tf32, fp16 or bf16");
        entry.precision = *parse_precision(precision);
        entry.rows_from = static_cast<int>(count(row["rows_from"], row_key + ".rows_from"));
        entry.size_log2 = static_cast<int>(count(row["size_log2"], row_key + ".size_log2"));
        entry.flops = positive(row["flops"], row_key + ".flops");
        entry.bytes = positive(row["bytes"], row_key + ".bytes");
        if (row["timed"].IsDefined()) entry.timed = text(row, "timed", row_key + ".timed", true);
        result.efficiency.push_back(entry);
      }
    }
    if (result.bandwidth <= 0 && !result.has_any_flops()) {
      fail(map, prefix.empty() ? "memory_bandwidth_tb_s" : prefix, "expected a bandwidth and/or peak FLOP/s");
    }
    return result;
  }

  // fixed_costs: {source, host_launch_us, op_overhead_us, sync_round_trip_us, parallel_region_us?, host_link_gb_s?}
  FixedCosts fixed_costs(const YAML::Node& map, const std::string& path) const {
    only_keys(map, path, {"source", "host_launch_us", "op_overhead_us", "sync_round_trip_us", "parallel_region_us",
                          "host_link_gb_s"});
    FixedCosts costs;
    costs.source = text(map, "source", path + ".source", true);
    auto microseconds = [&](const char* key) {
      const YAML::Node node = map[key];
      if (!node.IsDefined()) fail(map, path + "." + key, "missing; expected a time in microseconds");
      return non_negative(node, path + "." + key) * 1e-6;
    };
    costs.host_launch = microseconds("host_launch_us");
    costs.op_overhead = microseconds("op_overhead_us");
    costs.sync_round_trip = microseconds("sync_round_trip_us");
    // (written with six significant digits: a round trip equal to the sum may read back a hair below it)
    if (costs.sync_round_trip < (costs.host_launch + costs.op_overhead) * (1 - 1e-5)) {
      fail(map["sync_round_trip_us"], path + ".sync_round_trip_us",
           "expected at least host_launch_us + op_overhead_us: a round trip includes issuing the read");
    }
    if (const YAML::Node region = map["parallel_region_us"]; region.IsDefined()) {
      costs.parallel_region = non_negative(region, path + ".parallel_region_us") * 1e-6;
    }
    if (const YAML::Node link = map["host_link_gb_s"]; link.IsDefined()) {
      costs.host_link_bandwidth = positive(link, path + ".host_link_gb_s") * 1e9;
    }
    return costs;
  }

  // cache: {source, size_mib, bandwidth_tb_s | bandwidth_gb_s, beyond: [{reuse_mib, resident}]}
  CacheLevel cache(const YAML::Node& map, const std::string& path) const {
    only_keys(map, path, {"source", "size_mib", "bandwidth_tb_s", "bandwidth_gb_s", "beyond"});
    CacheLevel level;
    level.source = text(map, "source", path + ".source", true);
    if (!map["size_mib"].IsDefined()) fail(map, path + ".size_mib", "missing; expected the capacity in MiB");
    level.bytes = positive(map["size_mib"], path + ".size_mib") * 1024.0 * 1024.0;
    const YAML::Node tb = map["bandwidth_tb_s"];
    const YAML::Node gb = map["bandwidth_gb_s"];
    if (tb.IsDefined() == gb.IsDefined()) {
      fail(tb.IsDefined() ? gb : map, path + ".bandwidth_gb_s",
           "expected the read bandwidth once: bandwidth_tb_s or bandwidth_gb_s");
    }
    level.bandwidth = tb.IsDefined() ? positive(tb, path + ".bandwidth_tb_s") * 1e12
                                     : positive(gb, path + ".bandwidth_gb_s") * 1e9;
    if (const YAML::Node beyond = map["beyond"]; beyond.IsDefined()) {
      const std::string key = path + ".beyond";
      if (!beyond.IsSequence()) fail(beyond, key, "expected a list of {reuse_mib, resident}");
      double last_reuse = level.bytes, last_share = 1.0;
      for (size_t i = 0; i < beyond.size(); ++i) {
        const std::string point_key = key + "[" + std::to_string(i) + "]";
        only_keys(beyond[i], point_key, {"reuse_mib", "resident"});
        if (!beyond[i]["reuse_mib"].IsDefined() || !beyond[i]["resident"].IsDefined())
          fail(beyond[i], point_key, "expected reuse_mib and resident");
        CacheHit point{positive(beyond[i]["reuse_mib"], point_key + ".reuse_mib") * 1024.0 * 1024.0,
                       non_negative(beyond[i]["resident"], point_key + ".resident")};
        if (point.reuse_bytes <= last_reuse || point.resident > last_share)
          fail(beyond[i], point_key, "expected reuse distances beyond size_mib and the last point's, with shares "
                                     "from 1 down (never rising)");
        last_reuse = point.reuse_bytes;
        last_share = point.resident;
        level.beyond.push_back(point);
      }
    }
    return level;
  }

  // measured_at (ISO 8601 UTC), spread, noisy, probe_bandwidth_gb_s, core_round_trip_ns: all optional.
  void quality(const YAML::Node& map, Roofs& roofs) const {
    if (const YAML::Node at = map["measured_at"]; at.IsDefined()) {
      std::tm parts{};
      const std::string text = at.IsScalar() ? at.as<std::string>() : "";
      if (!strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &parts)) {
        fail(at, "measured.measured_at", "expected a UTC time such as 2026-12-01T12:00:00Z, got '" + text + "'");
      }
      roofs.measured_at = static_cast<int64_t>(timegm(&parts));
    }
    if (const YAML::Node spread = map["spread"]; spread.IsDefined()) {
      if (!spread.IsScalar()) fail(spread, "measured.spread", "expected a fraction");
      try {
        roofs.spread = spread.as<double>();
      } catch (const YAML::Exception&) {
        fail(spread, "measured.spread", "expected a fraction, got '" + spread.as<std::string>() + "'");
      }
      if (!(roofs.spread >= 0)) fail(spread, "measured.spread", "expected a fraction ≥ 0");
    }
    if (const YAML::Node noisy = map["noisy"]; noisy.IsDefined()) {
      try {
        roofs.noisy = noisy.as<bool>();
      } catch (const YAML::Exception&) {
        fail(noisy, "measured.noisy", "expected true or false");
      }
    }
    if (const YAML::Node probe = map["probe_bandwidth_gb_s"]; probe.IsDefined()) {
      roofs.probe_bandwidth = positive(probe, "measured.probe_bandwidth_gb_s") * 1e9;
    }
    if (const YAML::Node round_trip = map["core_round_trip_ns"]; round_trip.IsDefined()) {
      roofs.core_round_trip_ns = positive(round_trip, "measured.core_round_trip_ns");
    }
  }

 private:
  std::string file_;
};

}  // namespace

DeviceSpec parse_device_spec(std::string_view yaml_text, const std::string& file_name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& error) {
    throw InputError(file_name, error.mark.line + 1, "", "not valid YAML: " + error.msg);
  }
  const SpecReader reader(file_name);
  if (!root.IsMap()) throw InputError(file_name, 0, "", "expected a mapping of device fields");
  reader.only_keys(root, "",
                   {"name", "description", "source", "sm_count", "compute_capability", "match", "memory_bandwidth_tb_s",
                    "memory_bandwidth_gb_s", "peak_tflops", "peak_gflops", "efficiency", "cache_mb",
                    "measured", "machine", "fixed_costs", "cache"});
  DeviceSpec spec;
  spec.name = reader.text(root, "name", "name", true);
  spec.description = reader.text(root, "description", "description", false);
  if (root["sm_count"].IsDefined()) spec.sm_count = reader.count(root["sm_count"], "sm_count");
  if (root["compute_capability"].IsDefined()) {
    spec.compute_capability = reader.text(root, "compute_capability", "compute_capability", true);
    const std::string& cc = spec.compute_capability;
    const size_t dot = cc.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == cc.size() ||
        !std::all_of(cc.begin(), cc.end(), [](char ch) { return ch == '.' || (ch >= '0' && ch <= '9'); }) ||
        cc.find('.', dot + 1) != std::string::npos) {
      reader.fail(root["compute_capability"], "compute_capability", "expected MAJOR.MINOR as a string, e.g. \"8.0\"");
    }
  }
  if (root["cache_mb"].IsDefined()) spec.cache_bytes = reader.positive(root["cache_mb"], "cache_mb") * 1024 * 1024;
  if (const YAML::Node match = root["match"]; match.IsDefined()) {
    if (!match.IsSequence()) reader.fail(match, "match", "expected a list of device-name substrings");
    for (const auto& item : match) {
      if (!item.IsScalar()) reader.fail(item, "match", "expected a string");
      spec.match.push_back(item.as<std::string>());
    }
  }
  const bool has_datasheet = root["source"].IsDefined() || root["memory_bandwidth_tb_s"].IsDefined() ||
                             root["memory_bandwidth_gb_s"].IsDefined() || root["peak_tflops"].IsDefined() ||
                             root["peak_gflops"].IsDefined();
  if (has_datasheet) spec.datasheet = reader.roofs(root, "");
  if (const YAML::Node costs = root["fixed_costs"]; costs.IsDefined()) spec.fixed_costs = reader.fixed_costs(costs, "fixed_costs");
  if (const YAML::Node cache = root["cache"]; cache.IsDefined()) spec.cache = reader.cache(cache, "cache");
  if (const YAML::Node measured = root["measured"]; measured.IsDefined()) {
    reader.only_keys(measured, "measured",
                     {"source", "memory_bandwidth_tb_s", "memory_bandwidth_gb_s", "peak_tflops", "peak_gflops",
                      "efficiency", "efficiency_table", "fixed_costs", "cache", "measured_at",
                      "spread", "noisy", "probe_bandwidth_gb_s", "core_round_trip_ns"});
    spec.measured = reader.roofs(measured, "measured");
    reader.quality(measured, *spec.measured);
    if (const YAML::Node costs = measured["fixed_costs"]; costs.IsDefined())
      spec.measured_fixed_costs = reader.fixed_costs(costs, "measured.fixed_costs");
    if (const YAML::Node cache = measured["cache"]; cache.IsDefined())
      spec.measured_cache = reader.cache(cache, "measured.cache");
  }
  if (const YAML::Node machine = root["machine"]; machine.IsDefined()) {
    reader.only_keys(machine, "machine", {"hostname", "cpu_model", "threads"});
    MachineIdentity identity;
    identity.hostname = reader.text(machine, "hostname", "machine.hostname", true);
    identity.cpu_model = reader.text(machine, "cpu_model", "machine.cpu_model", true);
    if (!machine["threads"].IsDefined()) reader.fail(machine, "machine.threads", "missing; expected a thread count");
    identity.threads = reader.count(machine["threads"], "machine.threads");
    spec.machine = identity;
  }
  if (!spec.datasheet && !spec.measured) {
    throw InputError(file_name, 0, "source", "expected datasheet figures (source, memory_bandwidth_tb_s, peak_tflops) "
                                             "or a measured: section");
  }
  return spec;
}

DeviceSpec load_device_spec(const std::filesystem::path& file) {
  std::ifstream stream(file);
  if (!stream) throw InputError(file.string(), 0, "", "cannot read the device file");
  std::stringstream text;
  text << stream.rdbuf();
  return parse_device_spec(text.str(), file.string());
}

// ---------------------------------------------------------------------------------------
// Lookup

std::vector<std::filesystem::path> device_spec_directories() {
  std::vector<std::filesystem::path> directories;
  if (const char* override_directory = std::getenv("DECODELAB_DEVICES")) directories.emplace_back(override_directory);
  if (const char* home = std::getenv("DECODELAB_HOME")) directories.push_back(std::filesystem::path(home) / "configs" / "devices");
  directories.emplace_back(std::filesystem::path(DECODELAB_SOURCE_DIR) / "configs" / "devices");
  std::error_code error;
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) directories.push_back(executable.parent_path().parent_path() / "share" / "decodelab" / "configs" / "devices");
  return directories;
}

std::vector<std::string> list_device_specs() {
  std::set<std::string> names;
  for (const auto& directory : device_spec_directories()) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
      if (entry.path().extension() == ".yaml") names.insert(entry.path().stem().string());
    }
  }
  return {names.begin(), names.end()};
}

DeviceSpec find_device_spec(std::string_view name_or_path) {
  const std::filesystem::path given(name_or_path);
  if (given.extension() == ".yaml" || given.has_parent_path()) return load_device_spec(given);
  for (const auto& directory : device_spec_directories()) {
    const std::filesystem::path candidate = directory / (std::string(name_or_path) + ".yaml");
    if (std::filesystem::exists(candidate)) return load_device_spec(candidate);
  }
  std::string known;
  for (const std::string& name : list_device_specs()) known += (known.empty() ? "" : ", ") + name;
  throw InputError("", 0, "device", "unknown device '" + std::string(name_or_path) + "'; known: " + known);
}

std::optional<DeviceSpec> match_device_spec(std::string_view device_name) {
  auto lower = [](std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
  };
  const std::string wanted = lower(device_name);
  for (const std::string& name : list_device_specs()) {
    DeviceSpec spec = find_device_spec(name);
    for (const std::string& pattern : spec.match) {
      // The match must start and end at word boundaries: "NVIDIA L4" must not select an
      // "NVIDIA L40S", nor "H200" an "NVIDIA GH200", nor "NVIDIA B200" a "GB200".
      const std::string needle = lower(pattern);
      for (size_t at = wanted.find(needle); !needle.empty() && at != std::string::npos;
           at = wanted.find(needle, at + 1)) {
        const size_t end = at + needle.size();
        const bool starts = at == 0 || !std::isalnum(static_cast<unsigned char>(wanted[at - 1]));
        const bool ends = end == wanted.size() || !std::isalnum(static_cast<unsigned char>(wanted[end]));
        if (starts && ends) return spec;
      }
    }
  }
  return std::nullopt;
}

}  // namespace decodelab
