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

namespace {

// Log-linear interpolation of (extent, rate) points sorted by extent: the first point's rate
// below them, `beyond` above the last.
double interpolate_in_log(const std::vector<std::pair<double, double>>& points, double wanted, double beyond) {
  if (points.empty()) return 0.0;
  if (wanted <= points.front().first) return points.front().second;
  if (wanted > points.back().first) return beyond;
  for (size_t i = 1; i < points.size(); ++i) {
    if (wanted > points[i].first) continue;
    const double below = std::log(points[i - 1].first);
    const double above = std::log(points[i].first);
    const double t = above > below ? (std::log(wanted) - below) / (above - below) : 1.0;
    return std::exp((1 - t) * std::log(points[i - 1].second) + t * std::log(points[i].second));
  }
  return points.back().second;
}

// The measured (extent, rate) points of one precision in a ceiling table, sorted by extent.
template <typename Ceiling, int Ceiling::*Extent>
std::vector<std::pair<double, double>> points_of(const std::vector<Ceiling>& ceilings, Precision precision) {
  if (precision == Precision::Tf32) precision = Precision::Fp32;
  std::vector<std::pair<double, double>> points;
  for (const Ceiling& ceiling : ceilings)
    if (ceiling.precision == precision && ceiling.*Extent > 0 && ceiling.bandwidth > 0)
      points.emplace_back(static_cast<double>(ceiling.*Extent), ceiling.bandwidth);
  std::sort(points.begin(), points.end());
  return points;
}

}  // namespace

double Roofs::decode_matmul_bandwidth(Precision precision, int64_t rows) const {
  // Beyond the largest measured row count is a prefill: held to the compute ceiling.
  return interpolate_in_log(points_of<DecodeMatmulCeiling, &DecodeMatmulCeiling::rows>(decode_matmul_ceilings, precision),
                            static_cast<double>(std::max<int64_t>(rows, 1)), 0.0);
}

double Roofs::decode_attention_bandwidth(Precision precision, int64_t context) const {
  const std::vector<std::pair<double, double>> points =
      points_of<DecodeAttentionCeiling, &DecodeAttentionCeiling::context>(decode_attention_ceilings, precision);
  return interpolate_in_log(points, static_cast<double>(std::max<int64_t>(context, 1)),
                            points.empty() ? 0.0 : points.back().second);
}

double Roofs::matmul_flops(Precision precision) const {
  double ceiling = 0;
  switch (precision) {
    case Precision::Fp32:
    case Precision::Tf32: ceiling = matmul_fp32_flops; break;
    case Precision::Fp16: ceiling = matmul_fp16_flops > 0 ? matmul_fp16_flops : matmul_bf16_flops; break;
    case Precision::Bf16: ceiling = matmul_bf16_flops > 0 ? matmul_bf16_flops : matmul_fp16_flops; break;
  }
  return ceiling > 0 ? ceiling : flops(precision);
}

double Roofs::matmul_output_seconds(Precision precision) const {
  switch (precision) {
    case Precision::Fp32:
    case Precision::Tf32: return matmul_output_fp32_s;
    case Precision::Fp16: return matmul_output_fp16_s > 0 ? matmul_output_fp16_s : matmul_output_bf16_s;
    case Precision::Bf16: return matmul_output_bf16_s > 0 ? matmul_output_bf16_s : matmul_output_fp16_s;
  }
  return 0;
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
  take(merged.matmul_fp32_flops, real.matmul_fp32_flops);
  take(merged.matmul_fp16_flops, real.matmul_fp16_flops);
  take(merged.matmul_bf16_flops, real.matmul_bf16_flops);
  take(merged.matmul_output_fp32_s, real.matmul_output_fp32_s);
  take(merged.matmul_output_fp16_s, real.matmul_output_fp16_s);
  take(merged.matmul_output_bf16_s, real.matmul_output_bf16_s);
  if (!real.decode_matmul_ceilings.empty()) merged.decode_matmul_ceilings = real.decode_matmul_ceilings;
  if (!real.decode_attention_ceilings.empty()) merged.decode_attention_ceilings = real.decode_attention_ceilings;
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
    const YAML::Node matmul_tflops = map["matmul_tflops"];
    const YAML::Node matmul_gflops = map["matmul_gflops"];
    if (matmul_tflops.IsDefined() && matmul_gflops.IsDefined())
      fail(matmul_gflops, path("matmul_gflops"), "give the matmul ceilings once (TFLOP/s or GFLOP/s)");
    const YAML::Node ceilings = matmul_tflops.IsDefined() ? matmul_tflops : matmul_gflops;
    const std::string ceilings_key = path(matmul_tflops.IsDefined() ? "matmul_tflops" : "matmul_gflops");
    if (ceilings.IsDefined()) {
      only_keys(ceilings, ceilings_key, {"fp32", "fp16", "bf16"});
      const double unit = matmul_tflops.IsDefined() ? 1e12 : 1e9;
      for (const auto& entry : ceilings) {
        const std::string key = entry.first.as<std::string>();
        const double value = positive(entry.second, ceilings_key + "." + key) * unit;
        (key == "fp32" ? result.matmul_fp32_flops : key == "fp16" ? result.matmul_fp16_flops : result.matmul_bf16_flops) =
            value;
      }
    }
    if (const YAML::Node outputs = map["matmul_output_ns"]; outputs.IsDefined()) {
      const std::string outputs_key = path("matmul_output_ns");
      if (!outputs.IsMap()) fail(outputs, outputs_key, "expected {fp32: ns, fp16: ns, bf16: ns}");
      only_keys(outputs, outputs_key, {"fp32", "fp16", "bf16"});
      for (const auto& entry : outputs) {
        const std::string key = entry.first.as<std::string>();
        const double value = non_negative(entry.second, outputs_key + "." + key) * 1e-9;
        (key == "fp32" ? result.matmul_output_fp32_s : key == "fp16" ? result.matmul_output_fp16_s
                                                                     : result.matmul_output_bf16_s) = value;
      }
    }
    // {fp16: {EXTENT: GB/s, ...}, ...}: a measured rate per precision and extent (rows, context).
    auto ceiling_table = [&](const char* name, const char* extent, const char* extent_noun, auto add) {
      const YAML::Node table = map[name];
      if (!table.IsDefined()) return;
      const std::string table_key = path(name);
      if (!table.IsMap()) fail(table, table_key, std::string("expected {fp16: {") + extent + ": GB/s, ...}, ...}");
      only_keys(table, table_key, {"fp32", "fp16", "bf16"});
      for (const auto& entry : table) {
        const std::string key = entry.first.as<std::string>();
        if (!entry.second.IsMap()) fail(entry.second, table_key + "." + key, std::string("expected {") + extent + ": GB/s, ...}");
        for (const auto& point : entry.second) {
          const std::string point_key = table_key + "." + key + "." + point.first.as<std::string>();
          const int64_t at = count(point.first, point_key);
          if (at < 1) fail(point.first, point_key, std::string("expected a ") + extent_noun + " of at least 1");
          add(*parse_precision(key), static_cast<int>(at), positive(point.second, point_key) * 1e9);
        }
      }
    };
    ceiling_table("decode_matmul_gb_s", "ROWS", "row count", [&](Precision precision, int rows, double bandwidth) {
      result.decode_matmul_ceilings.push_back({precision, rows, bandwidth});
    });
    ceiling_table("decode_attention_gb_s", "CONTEXT", "context length", [&](Precision precision, int context, double bandwidth) {
      result.decode_attention_ceilings.push_back({precision, context, bandwidth});
    });
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

  // cache: {source, size_mib, bandwidth_tb_s | bandwidth_gb_s}
  CacheLevel cache(const YAML::Node& map, const std::string& path) const {
    only_keys(map, path, {"source", "size_mib", "bandwidth_tb_s", "bandwidth_gb_s"});
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
                    "memory_bandwidth_gb_s", "peak_tflops", "peak_gflops", "matmul_tflops", "matmul_gflops", "cache_mb",
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
                      "matmul_tflops", "matmul_gflops", "matmul_output_ns", "decode_matmul_gb_s", "decode_attention_gb_s", "fixed_costs", "cache", "measured_at",
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
