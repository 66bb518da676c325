// The calibration file (see calibration.h): where it lives, how it is written and read back
// (every problem named by file and key), and whether it describes this machine.
#include "profiling/measure/calibration.h"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "engine/base/errors.h"
#include <unistd.h>

#include "profiling/atomic_file.h"
#include "profiling/measure/kernel_variant_choice.h"
#include "profiling/measure/machine_check.h"
#include "profiling/units.h"

namespace decodelab {

MachineIdentity this_machine(int threads) {
  MachineIdentity machine;
  char host[256] = {};
  machine.hostname = ::gethostname(host, sizeof host - 1) == 0 && host[0] ? host : "unknown-host";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) machine.cpu_model = line.substr(line.find_first_not_of(" \t", colon + 1));
    break;
  }
  if (machine.cpu_model.empty()) machine.cpu_model = "unknown-cpu";
  machine.threads = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return machine;
}

std::filesystem::path decodelab_cache_directory() {
  if (const char* override_directory = std::getenv("DECODELAB_CACHE_DIR"); override_directory && *override_directory)
    return override_directory;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "decodelab";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : "/tmp") / ".cache" / "decodelab";
}

std::filesystem::path calibration_path(int threads) {
  const MachineIdentity machine = this_machine(threads);
  std::string safe;
  for (char c : machine.hostname) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    safe += keep ? c : '-';
  }
  return decodelab_cache_directory() / ("calibration-" + safe + "-" + std::to_string(machine.threads) + "threads.json");
}

std::vector<std::string> cpu_flags_that_matter() {
  // What the kernels dispatch on or a compiler may use for them: vector width and FMA, the
  // half-precision conversions, AVX-512's families and its bf16/fp16/VNNI arithmetic, AMX;
  // on Arm, NEON (asimd) with its half and bf16 forms, and SVE.
  static const std::vector<std::string> wanted = {
      "avx",         "avx2",        "fma",         "f16c",          "avx512f",     "avx512bw",    "avx512vl",
      "avx512dq",    "avx512cd",    "avx512_bf16", "avx512_fp16",   "avx512_vnni", "avx_vnni",    "amx_tile",
      "amx_bf16",    "amx_int8",    "amx_fp16",    "asimd",         "asimdhp",     "bf16",        "sve",
      "sve2"};
  std::vector<std::string> found;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    for (std::string flag; words >> flag;)
      if (std::find(wanted.begin(), wanted.end(), flag) != wanted.end()) found.push_back(flag);
    break;  // every core lists the same flags
  }
  return found;
}

namespace {

// "2026-12-01 22:19 UTC"
std::string utc_time(int64_t seconds) {
  if (seconds <= 0) return "an unknown time";
  const std::time_t at = static_cast<std::time_t>(seconds);
  std::tm parts{};
  gmtime_r(&at, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &parts);
  return text;
}

std::string age(int64_t seconds) {
  if (seconds < 0) return "in the future";
  if (seconds < 120) return std::to_string(seconds) + " s ago";
  if (seconds < 7200) return std::to_string(seconds / 60) + " min ago";
  if (seconds < 2 * 86400) return std::to_string(seconds / 3600) + " h ago";
  return std::to_string(seconds / 86400) + " days ago";
}

std::string decodelab_version_string() {
#ifdef DECODELAB_VERSION
  return DECODELAB_VERSION;
#else
  return "unknown";
#endif
}

// Reads the file's keys, each problem an InputError naming the file and the key's path.
class CalibrationReader {
 public:
  explicit CalibrationReader(std::string file) : file_(std::move(file)) {}

  const nlohmann::json& member(const nlohmann::json& object, const std::string& key, const std::string& path,
                               nlohmann::json::value_t type, const char* expected) const {
    const std::string name = path.empty() ? key : path + "." + key;
    if (!object.is_object()) throw InputError(file_, 0, path.empty() ? "(top level)" : path, "expected an object");
    const auto found = object.find(key);
    if (found == object.end()) throw InputError(file_, 0, name, std::string("missing; expected ") + expected);
    const bool number = type == nlohmann::json::value_t::number_float;
    const bool fits = number ? found->is_number() : found->type() == type ||
                      (type == nlohmann::json::value_t::number_integer && found->is_number_integer());
    if (!fits) throw InputError(file_, 0, name, std::string("expected ") + expected + ", not " + found->dump());
    return *found;
  }
  std::string text(const nlohmann::json& object, const std::string& key, const std::string& path = "") const {
    return member(object, key, path, nlohmann::json::value_t::string, "a string").get<std::string>();
  }
  double number(const nlohmann::json& object, const std::string& key, const std::string& path = "") const {
    return member(object, key, path, nlohmann::json::value_t::number_float, "a number").get<double>();
  }
  int64_t integer(const nlohmann::json& object, const std::string& key, const std::string& path = "") const {
    return member(object, key, path, nlohmann::json::value_t::number_integer, "an integer").get<int64_t>();
  }
  bool flag(const nlohmann::json& object, const std::string& key, const std::string& path = "") const {
    return member(object, key, path, nlohmann::json::value_t::boolean, "true or false").get<bool>();
  }
  const nlohmann::json& object(const nlohmann::json& object, const std::string& key, const std::string& path = "") const {
    return member(object, key, path, nlohmann::json::value_t::object, "an object");
  }
  const nlohmann::json& array(const nlohmann::json& object, const std::string& key, const std::string& path = "") const {
    return member(object, key, path, nlohmann::json::value_t::array, "a list");
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// The roofs as a device spec writes them, checked leaf by leaf against the shape a full spec
// has (a number where it has a number, a string where a string), so that a wrong value is
// named by its key rather than by the JSON library's "type must be number".
void check_shape(const nlohmann::json& value, const nlohmann::json& shape, const std::string& path, const CalibrationReader& reader) {
  if (shape.is_object()) {
    if (!value.is_object()) throw InputError(reader.file(), 0, path, "expected an object, not " + value.dump());
    for (const auto& [key, shape_value] : shape.items()) {
      if (value.contains(key)) check_shape(value.at(key), shape_value, path + "." + key, reader);
    }
  } else if (shape.is_array()) {
    if (!value.is_array()) throw InputError(reader.file(), 0, path, "expected a list, not " + value.dump());
    if (!shape.empty()) {
      for (size_t i = 0; i < value.size(); ++i)
        check_shape(value[i], shape.front(), path + "[" + std::to_string(i) + "]", reader);
    }
  } else if (shape.is_number() && !value.is_number()) {
    throw InputError(reader.file(), 0, path, "expected a number, not " + value.dump());
  } else if (shape.is_string() && !value.is_string()) {
    throw InputError(reader.file(), 0, path, "expected a string, not " + value.dump());
  } else if (shape.is_boolean() && !value.is_boolean()) {
    throw InputError(reader.file(), 0, path, "expected true or false, not " + value.dump());
  }
}

// A spec with every part a measured CPU spec can have, as the shape the file's is checked against.
nlohmann::json full_spec_shape() {
  DeviceSpec spec;
  Roofs roofs;
  roofs.efficiency = {Efficiency{"c", Precision::Fp16, 1, 1, 1.0, 1.0, "t"}};
  roofs.efficiency_source = "s";
  roofs.measured_at = 1;
  roofs.fp64_flops = 1;
  roofs.probe_bandwidth = 1;
  roofs.core_round_trip_ns = 1;
  spec.measured = roofs;
  spec.cache_bytes = 1;
  spec.compute_capability = "c";
  spec.datasheet = roofs;
  spec.measured_fixed_costs = FixedCosts{1, 1, 1, 1, "s", 1};
  spec.fixed_costs = spec.measured_fixed_costs;
  spec.measured_cache = CacheLevel{1, 1, "s"};
  spec.cache = spec.measured_cache;
  spec.machine = MachineIdentity{"h", "c", 1};
  spec.match = {"m"};
  return to_json(spec);
}

}  // namespace

std::string calibration_format_problem(int64_t format) {
  if (format < kCalibrationFormat) {
    return "out of date: format " + std::to_string(format) + ", this decodelab reads format " +
           std::to_string(kCalibrationFormat) + " (what the figures mean has changed); run `decodelab calibrate`";
  }
  return "format " + std::to_string(format) + " is a newer decodelab's, this one reads format " +
         std::to_string(kCalibrationFormat) + "; run `decodelab calibrate` with this decodelab, or use the newer one";
}

nlohmann::json to_json(const Calibration& calibration) {
  return {{"format", "decodelab calibration"},
          {"format_version", calibration.format},
          {"decodelab_version", calibration.decodelab_version},
          {"measured_at", calibration.measured_at},
          {"measured_at_utc", utc_time(calibration.measured_at)},
          {"measuring_seconds", calibration.measuring_seconds},
          {"machine",
           {{"hostname", calibration.machine.hostname},
            {"cpu_model", calibration.machine.cpu_model},
            {"cpu_flags", calibration.cpu_flags},
            {"threads", calibration.machine.threads},
            {"device", calibration.device},
            {"kernel_variant", calibration.kernel_variant}}},
          {"kernel_variants", calibration.kernel_variants.is_null() ? nlohmann::json::object() : calibration.kernel_variants},
          {"machine_check", {{"contended", calibration.contended}, {"summary", calibration.machine_check}}},
          {"roofs", to_json(calibration.spec)},
          {"measurement", calibration.measurement}};
}

Calibration parse_calibration(std::string_view text, const std::string& file) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    throw InputError(file, 0, "", std::string("not a JSON calibration file (") + error.what() +
                                      "); `decodelab calibrate` writes it afresh");
  }
  const CalibrationReader read(file);
  if (!json.is_object()) throw InputError(file, 0, "(top level)", "expected an object, not " + json.dump().substr(0, 40));
  Calibration calibration;
  calibration.format = static_cast<int>(read.integer(json, "format_version"));
  if (calibration.format != kCalibrationFormat) {
    throw InputError(file, 0, "format_version", calibration_format_problem(calibration.format));
  }
  calibration.decodelab_version = read.text(json, "decodelab_version");
  calibration.measured_at = read.integer(json, "measured_at");
  calibration.measuring_seconds = read.number(json, "measuring_seconds");
  const nlohmann::json& machine = read.object(json, "machine");
  calibration.machine.hostname = read.text(machine, "hostname", "machine");
  calibration.machine.cpu_model = read.text(machine, "cpu_model", "machine");
  calibration.machine.threads = static_cast<int>(read.integer(machine, "threads", "machine"));
  if (calibration.machine.threads < 1)
    throw InputError(file, 0, "machine.threads", "expected a positive integer, not " + std::to_string(calibration.machine.threads));
  calibration.device = read.text(machine, "device", "machine");
  if (machine.contains("kernel_variant")) calibration.kernel_variant = read.text(machine, "kernel_variant", "machine");
  calibration.kernel_variants = json.value("kernel_variants", nlohmann::json::object());
  const nlohmann::json& flags = read.array(machine, "cpu_flags", "machine");
  for (size_t i = 0; i < flags.size(); ++i) {
    if (!flags[i].is_string())
      throw InputError(file, 0, "machine.cpu_flags[" + std::to_string(i) + "]", "expected a string, not " + flags[i].dump());
    calibration.cpu_flags.push_back(flags[i].get<std::string>());
  }
  const nlohmann::json& check = read.object(json, "machine_check");
  calibration.contended = read.flag(check, "contended", "machine_check");
  calibration.machine_check = read.text(check, "summary", "machine_check");
  const nlohmann::json& roofs = read.object(json, "roofs");
  check_shape(roofs, full_spec_shape(), "roofs", read);
  calibration.spec = device_spec_from_json(roofs, file + ": roofs");
  if (!calibration.spec.measured) throw InputError(file, 0, "roofs.measured", "missing; expected the measured roofs");
  calibration.measurement = json.value("measurement", nlohmann::json::object());
  return calibration;
}

Calibration load_calibration(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string(), 0, "", "cannot read the calibration file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_calibration(text.str(), file.string());
}

void save_calibration(const Calibration& calibration, const std::filesystem::path& file) {
  save_file_atomically(file, to_json(calibration).dump(2) + "\n");
}

std::vector<std::string> calibration_differences(const Calibration& calibration, const MachineIdentity& here,
                                                 const std::vector<std::string>& flags_here,
                                                 const std::string& device_here) {
  std::vector<std::string> differences;
  auto differ = [&](const std::string& what, const std::string& file_says, const std::string& here_is) {
    if (file_says != here_is)
      differences.push_back(what + ": the file says \"" + file_says + "\", this machine is \"" + here_is + "\"");
  };
  differ("hostname", calibration.machine.hostname, here.hostname);
  differ("CPU model", calibration.machine.cpu_model, here.cpu_model);
  if (calibration.machine.threads != here.threads) {
    differences.push_back("threads: the file is for " + std::to_string(calibration.machine.threads) + ", this run uses " +
                          std::to_string(here.threads));
  }
  auto joined = [](const std::vector<std::string>& flags) {
    std::string text;
    for (const std::string& flag : flags) text += (text.empty() ? "" : " ") + flag;
    return text.empty() ? std::string("none") : text;
  };
  differ("CPU flags", joined(calibration.cpu_flags), joined(flags_here));
  // Only where the rest agrees: the description repeats the CPU model and threads.
  if (differences.empty()) differ("device (kernel instruction set, weight stream)", calibration.device, device_here);
  return differences;
}

std::vector<std::string> calibration_differences(const Calibration& calibration, const Backend& backend, int threads) {
  return calibration_differences(calibration, this_machine(threads), cpu_flags_that_matter(), backend.device_description());
}

std::string describe_calibration(const Calibration& calibration, const std::filesystem::path& file, int64_t now_seconds,
                                 const std::vector<std::string>& differences) {
  std::ostringstream text;
  text << "calibration  " << file.string() << " (format " << calibration.format << ", written by decodelab "
       << calibration.decodelab_version << ")\n";
  text << "measured     " << utc_time(calibration.measured_at) << " (" << age(now_seconds - calibration.measured_at)
       << "), in " << format_number(calibration.measuring_seconds) << " s, on a "
       << (calibration.contended ? "busy" : "quiet") << " machine";
  if (calibration.spec.measured && calibration.spec.measured->noisy) text << " (some figures noisy)";
  text << "\n";
  text << "machine      " << calibration.machine.hostname << ": " << calibration.machine.cpu_model << ", "
       << calibration.machine.threads << " kernel thread" << (calibration.machine.threads == 1 ? "" : "s") << "\n";
  std::string flags;
  for (const std::string& flag : calibration.cpu_flags) flags += (flags.empty() ? "" : " ") + flag;
  text << "CPU flags    " << (flags.empty() ? "(none of those that matter)" : flags) << "\n";
  text << "device       " << calibration.device << "\n";
  if (!calibration.machine_check.empty()) text << "before       " << calibration.machine_check << "\n";
  if (!differences.empty()) {
    text << "\nNOT THIS MACHINE: commands here do not use this calibration; what differs:\n";
    for (const std::string& difference : differences) text << "  - " << difference << "\n";
  }
  return text.str();
}

Calibration calibrate_machine(Backend& backend, int threads, const RoofMeasureOptions& options, std::ostream* progress,
                              const MachineState* machine) {
  const auto start = std::chrono::steady_clock::now();
  RoofMeasurement measurement = measure_roofs(backend, options, progress);
  Calibration calibration;
  if (machine) {
    measurement.machine_contended = machine->contended;
    measurement.probe_bandwidth = machine->probe_bandwidth;
    measurement.core_round_trip_ns = machine->core_round_trip_ns;
    calibration.contended = machine->contended;
    calibration.machine_check = machine->summary();
  }
  calibration.machine = this_machine(threads);
  calibration.cpu_flags = cpu_flags_that_matter();
  calibration.device = backend.device_description();
  calibration.decodelab_version = decodelab_version_string();
  calibration.spec = measured_spec(calibration.device, calibration.machine, measurement);
  calibration.spec.name = "calibrated-" + calibration.machine.hostname;  // what a report names the device
  calibration.measured_at = calibration.spec.measured->measured_at;
  calibration.measurement = to_json(measurement);
  calibration.measuring_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The figures exactly as the file holds them, so a command reading it back prices with
  // what the calibration itself would.
  return parse_calibration(to_json(calibration).dump(), "(the calibration just measured)");
}

Calibration calibrate_to_file(Backend& backend, int threads, const std::filesystem::path& file,
                              const RoofMeasureOptions& options, std::ostream* progress, const MachineState* machine,
                              const KernelVariantChoice& kernels) {
  std::optional<MachineState> checked;
  if (!machine) {
    // The machine's own probe only: an earlier calibration, even an unreadable one, is
    // replaced, not read.
    checked = check_machine(backend, threads, RoofsMachine{}, MachineThresholds{}, options.checkpoint);
    if (const std::string said = checked->warning(false); !said.empty()) (progress ? *progress : std::cerr) << said;
    machine = &*checked;
  }
  Calibration calibration = calibrate_machine(backend, threads, options, progress, machine);
  calibration.kernel_variant = kernels.chosen;
  if (!kernels.timings.empty() || !kernels.reason.empty()) calibration.kernel_variants = to_json(kernels);
  try {
    save_calibration(calibration, file);
  } catch (const std::runtime_error& error) {
    throw ResourceError(std::string("the calibration could not be written: ") + error.what() +
                        " (DECODELAB_CACHE_DIR names the folder calibrations are kept in)");
  }
  return calibration;
}

RoofMeasureOptions quick_calibration_options() {
  RoofMeasureOptions options;
  options.copy_bytes = size_t{4} << 20;
  options.matmul_size = 128;
  options.repeats = 2;
  options.min_warmup_seconds = 0;
  options.layer_shapes = {LayerShape{"quick", 128, 256, 2, 1, 64}};
  options.efficiency_rows = {1, 8};
  options.efficiency_contexts = {32, 128};
  options.efficiency_repeats = 2;
  options.fma_probe_flops = 2e8;
  options.cache_level = false;
  return options;
}

CalibrationLookup find_calibration(const Backend& backend, int threads) {
  CalibrationLookup lookup;
  lookup.file = calibration_path(threads);
  std::error_code error;
  if (!std::filesystem::exists(lookup.file, error)) {
    lookup.why_not = "no calibration file (" + lookup.file.string() + ")";
    return lookup;
  }
  lookup.exists = true;
  // A file of another format is an older or newer decodelab's: calibrated again (said), not an error.
  {
    std::ifstream in(lookup.file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    const nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, false);
    if (json.is_object() && json.contains("format_version") && json["format_version"].is_number_integer() &&
        json["format_version"].get<int64_t>() != kCalibrationFormat) {
      lookup.why_not = lookup.file.string() + ": " + calibration_format_problem(json["format_version"].get<int64_t>());
      return lookup;
    }
  }
  const Calibration calibration = load_calibration(lookup.file);
  const std::vector<std::string> differences = calibration_differences(calibration, backend, threads);
  if (!differences.empty()) {
    lookup.why_not = lookup.file.string() + " describes another machine or thread count (" + format_list(differences) + ")";
    return lookup;
  }
  lookup.spec = calibration.spec;
  return lookup;
}

}  // namespace decodelab

namespace decodelab {

std::string calibrated_cpu_kernels(int threads) {
  try {
    const std::filesystem::path file = calibration_path(threads);
    std::error_code error;
    if (!std::filesystem::exists(file, error)) return "";
    const Calibration calibration = load_calibration(file);
    const MachineIdentity here = this_machine(calibration.machine.threads);
    if (calibration.machine.hostname != here.hostname || calibration.machine.cpu_model != here.cpu_model) return "";
    return calibration.kernel_variant;
  } catch (const InputError&) {
    return "";  // the roof lookup reads the same file and says what is wrong with it
  }
}

}  // namespace decodelab
