// Device YAML: loading (every key checked, unknown keys refused so a typo never passes
// silently), writing, lookup by name or CUDA device name, and JSON for results/traces.
// Figures are stored in the units people quote (TB/s, TFLOP/s; GB/s, GFLOP/s for CPUs)
// and held in base units (bytes/s, FLOP/s) in memory.
#include "profiling/device_spec.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "engine/errors.h"
#include "profiling/atomic_file.h"

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
  merged.source = "measured where measured (" + real.source + "), datasheet otherwise (" + datasheet->source + ")";
  merged.measured_at = real.measured_at;
  merged.spread = real.spread;
  merged.noisy = real.noisy;
  merged.probe_bandwidth = real.probe_bandwidth;
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
      only_keys(peaks, peaks_key, {"fp32", "tf32", "fp16", "bf16"});
      for (const auto& entry : peaks) {
        const std::string key = entry.first.as<std::string>();
        const double value = positive(entry.second, peaks_key + "." + key) * scale;
        switch (*parse_precision(key)) {
          case Precision::Fp32: result.fp32_flops = value; break;
          case Precision::Tf32: result.tf32_flops = value; break;
          case Precision::Fp16: result.fp16_flops = value; break;
          case Precision::Bf16: result.bf16_flops = value; break;
        }
      }
    }
    if (result.bandwidth <= 0 && !result.has_any_flops()) {
      fail(map, prefix.empty() ? "memory_bandwidth_tb_s" : prefix, "expected a bandwidth and/or peak FLOP/s");
    }
    return result;
  }

  // measured_at (ISO 8601 UTC), spread, noisy, probe_bandwidth_gb_s: all optional.
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
                   {"name", "description", "source", "sm_count", "match", "memory_bandwidth_tb_s",
                    "memory_bandwidth_gb_s", "peak_tflops", "peak_gflops", "cache_mb", "measured", "machine"});
  DeviceSpec spec;
  spec.name = reader.text(root, "name", "name", true);
  spec.description = reader.text(root, "description", "description", false);
  if (root["sm_count"].IsDefined()) spec.sm_count = reader.count(root["sm_count"], "sm_count");
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
  if (const YAML::Node measured = root["measured"]; measured.IsDefined()) {
    reader.only_keys(measured, "measured",
                     {"source", "memory_bandwidth_tb_s", "memory_bandwidth_gb_s", "peak_tflops", "peak_gflops",
                      "measured_at", "spread", "noisy", "probe_bandwidth_gb_s"});
    spec.measured = reader.roofs(measured, "measured");
    reader.quality(measured, *spec.measured);
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
// YAML writing

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
  std::string peaks;
  auto add = [&](const char* key, double value) {
    if (value > 0) peaks += std::string(peaks.empty() ? "" : ", ") + key + ": " + number(value / scale);
  };
  add("fp32", roofs.fp32_flops);
  add("tf32", roofs.tf32_flops);
  add("fp16", roofs.fp16_flops);
  add("bf16", roofs.bf16_flops);
  out << indent << (tera ? "peak_tflops: {" : "peak_gflops: {") << peaks << "}\n";
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
}

}  // namespace

std::string device_spec_to_yaml(const DeviceSpec& spec) {
  std::ostringstream out;
  out << "# decodelab device roofs" << (spec.description.empty() ? "" : ": " + spec.description) << "\n";
  out << "name: " << quoted(spec.name) << "\n";
  if (!spec.description.empty()) out << "description: " << quoted(spec.description) << "\n";
  if (spec.sm_count > 0) out << "sm_count: " << spec.sm_count << "\n";
  if (!spec.match.empty()) {
    out << "match: [";
    for (size_t i = 0; i < spec.match.size(); ++i) out << (i ? ", " : "") << quoted(spec.match[i]);
    out << "]\n";
  }
  if (spec.datasheet) write_roofs(out, *spec.datasheet, "");
  if (spec.machine) {
    out << "machine:\n  hostname: " << quoted(spec.machine->hostname) << "\n  cpu_model: "
        << quoted(spec.machine->cpu_model) << "\n  threads: " << spec.machine->threads << "\n";
  }
  if (spec.cache_bytes > 0) out << "cache_mb: " << number(spec.cache_bytes / (1024 * 1024)) << "\n";
  if (spec.measured) {
    out << "measured:\n";
    write_roofs(out, *spec.measured, "  ");
    write_quality(out, *spec.measured, "  ");
  }
  return out.str();
}

void save_device_spec(const DeviceSpec& spec, const std::filesystem::path& file) {
  save_file_atomically(file, device_spec_to_yaml(spec));
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
      // The match must end at a word boundary: "NVIDIA L4" must not select an "NVIDIA L40S".
      const std::string needle = lower(pattern);
      for (size_t at = wanted.find(needle); !needle.empty() && at != std::string::npos;
           at = wanted.find(needle, at + 1)) {
        const size_t end = at + needle.size();
        if (end == wanted.size() || !std::isalnum(static_cast<unsigned char>(wanted[end]))) return spec;
      }
    }
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------
// JSON

nlohmann::json to_json(const Roofs& roofs) {
  nlohmann::json json = {{"source", roofs.source},
                         {"bandwidth_bytes_per_s", roofs.bandwidth},
                         {"flops_per_s", {{"fp32", roofs.fp32_flops}, {"tf32", roofs.tf32_flops},
                                          {"fp16", roofs.fp16_flops}, {"bf16", roofs.bf16_flops}}}};
  if (roofs.measured_at > 0) {
    json["measured_at"] = roofs.measured_at;
    json["spread"] = roofs.spread;
    json["noisy"] = roofs.noisy;
  }
  if (roofs.probe_bandwidth > 0) json["probe_bandwidth_bytes_per_s"] = roofs.probe_bandwidth;
  return json;
}

nlohmann::json to_json(const DeviceSpec& spec) {
  nlohmann::json json = {{"name", spec.name}, {"description", spec.description}, {"sm_count", spec.sm_count},
                         {"match", spec.match}};
  if (spec.cache_bytes > 0) json["cache_bytes"] = spec.cache_bytes;
  if (spec.datasheet) json["datasheet"] = to_json(*spec.datasheet);
  if (spec.measured) json["measured"] = to_json(*spec.measured);
  if (spec.machine) {
    json["machine"] = {{"hostname", spec.machine->hostname},
                       {"cpu_model", spec.machine->cpu_model},
                       {"threads", spec.machine->threads}};
  }
  return json;
}

namespace {

Roofs roofs_from_json(const nlohmann::json& json, const std::string& where) {
  try {
    Roofs roofs;
    roofs.source = json.at("source").get<std::string>();
    roofs.bandwidth = json.at("bandwidth_bytes_per_s").get<double>();
    const nlohmann::json& flops = json.at("flops_per_s");
    roofs.fp32_flops = flops.at("fp32").get<double>();
    roofs.tf32_flops = flops.at("tf32").get<double>();
    roofs.fp16_flops = flops.at("fp16").get<double>();
    roofs.bf16_flops = flops.at("bf16").get<double>();
    roofs.measured_at = json.value("measured_at", int64_t{0});
    roofs.spread = json.value("spread", 0.0);
    roofs.noisy = json.value("noisy", false);
    roofs.probe_bandwidth = json.value("probe_bandwidth_bytes_per_s", 0.0);
    return roofs;
  } catch (const nlohmann::json::exception& error) {
    throw InputError(where, 0, "", std::string("malformed roofs: ") + error.what());
  }
}

}  // namespace

DeviceSpec device_spec_from_json(const nlohmann::json& json, const std::string& where) {
  try {
    DeviceSpec spec;
    spec.name = json.at("name").get<std::string>();
    spec.description = json.at("description").get<std::string>();
    spec.sm_count = json.at("sm_count").get<int>();
    spec.match = json.at("match").get<std::vector<std::string>>();
    spec.cache_bytes = json.value("cache_bytes", 0.0);
    if (json.contains("datasheet")) spec.datasheet = roofs_from_json(json["datasheet"], where + ".datasheet");
    if (json.contains("measured")) spec.measured = roofs_from_json(json["measured"], where + ".measured");
    if (json.contains("machine")) {
      const nlohmann::json& machine = json["machine"];
      spec.machine = MachineIdentity{machine.at("hostname").get<std::string>(),
                                     machine.at("cpu_model").get<std::string>(), machine.at("threads").get<int>()};
    }
    return spec;
  } catch (const nlohmann::json::exception& error) {
    throw InputError(where, 0, "", std::string("malformed device spec: ") + error.what());
  }
}

}  // namespace decodelab
