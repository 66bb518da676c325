// The per-machine cache of measured roofs (see roof_cache.h): where it lives, and the roofs
// a run is held to by default.
#include "profiling/measure/roof_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <ostream>
#include <thread>

#include "engine/base/errors.h"
#include "profiling/measure/calibration.h"
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

std::filesystem::path roof_cache_path(const MachineIdentity& machine) {
  const std::filesystem::path directory = decodelab_cache_directory();
  std::string name = "roofs-c" + std::to_string(kCalibrationFormat) + "-" + machine.hostname + "-" + machine.cpu_model + "-" + std::to_string(machine.threads);
  std::string safe;
  for (char c : name) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    if (keep) {
      safe += c;
    } else if (!safe.empty() && safe.back() != '-') {
      safe += '-';
    }
  }
  return directory / (safe + ".yaml");
}
namespace {

MachineIdentity identity_for(const Backend& backend, int threads) {
  MachineIdentity machine = this_machine(threads);
  if (is_gpu_backend(backend)) machine.cpu_model = backend.device_description();  // the GPU is what was measured
  return machine;
}

}  // namespace

std::optional<DeviceSpec> cached_device_spec(Backend& backend, int threads) {
  if (is_gpu_backend(backend) && match_device_spec(backend.device_description())) return std::nullopt;
  if (!is_gpu_backend(backend)) {
    if (CalibrationLookup calibration = find_calibration(backend, threads); calibration.spec) return calibration.spec;
  }
  const MachineIdentity machine = identity_for(backend, threads);
  const std::filesystem::path cache = roof_cache_path(machine);
  std::error_code error;
  if (!std::filesystem::exists(cache, error)) return std::nullopt;
  try {
    DeviceSpec cached = load_device_spec(cache);
    if (cached.machine == machine && cached.measured) return cached;
  } catch (const InputError&) {
  }
  return std::nullopt;
}

DeviceSpec cache_measured_spec(const DeviceSpec& fresh, const std::filesystem::path& cache, std::ostream* progress) {
  try {
    save_device_spec(fresh, cache);
  } catch (const std::exception& error) {
    if (progress) *progress << "could not cache the roofs: " << error.what() << "\n";
  }
  // The figures as the cache holds them (rounded in YAML), so the run that measured reads,
  // prices and predicts with exactly what every later run reads back.
  return parse_device_spec(device_spec_to_yaml(fresh), cache.string());
}

namespace {

// Nothing is measured in silence: what is about to be measured and why goes to `progress`,
// or to stderr when the caller shows no progress, then how long it took.
DeviceSpec measure_into_cache(Backend& backend, int threads, std::ostream* progress, const RoofMeasureOptions& options,
                              const MachineState* machine, const std::string& why) {
  const MachineIdentity identity = identity_for(backend, threads);
  const std::filesystem::path cache = roof_cache_path(identity);
  std::ostream& notice = progress ? *progress : std::cerr;
  notice << "decodelab: " << why << ": measuring its roofs now (tens of seconds; kept in " << cache.string() << ")";
  if (!is_gpu_backend(backend)) notice << "; `decodelab calibrate` measures this machine once, for every command";
  notice << "\n";
  notice.flush();
  const auto start = std::time(nullptr);
  RoofMeasurement measurement = measure_roofs(backend, options, progress);
  notice << "decodelab: measured the roofs in " << (std::time(nullptr) - start) << " s\n";
  if (machine) {
    measurement.machine_contended = machine->contended;
    measurement.probe_bandwidth = machine->probe_bandwidth;
    measurement.core_round_trip_ns = machine->core_round_trip_ns;
  }
  DeviceSpec spec = measured_spec(backend.device_description(), identity, measurement);
  return cache_measured_spec(spec, cache, progress);
}

}  // namespace

// A cached measurement younger than this is not measured again (it would only repeat it).
constexpr int64_t kRemeasureAfterSeconds = 600;

DeviceSpec default_device_spec(Backend& backend, int threads, std::ostream* progress, const RoofMeasureOptions& options,
                               const MachineState* machine) {
  if (is_gpu_backend(backend)) {
    if (std::optional<DeviceSpec> known = match_device_spec(backend.device_description())) return *known;
  }
  const std::filesystem::path cache = roof_cache_path(identity_for(backend, threads));
  // The calibration, when it describes this machine, is what every command is held to.
  std::string uncalibrated = "this GPU has no configs/devices spec";
  std::string unused_calibration;
  if (!is_gpu_backend(backend)) {
    CalibrationLookup calibration = find_calibration(backend, threads);
    if (calibration.spec) return *calibration.spec;
    uncalibrated = "this machine is not calibrated (" + calibration.why_not + ")";
    if (calibration.exists) unused_calibration = calibration.why_not;
  }
  // A calibration that is there but not this machine's is said even when the roof cache
  // answers: the user calibrated and should learn why it is not used.
  auto say_unused_calibration = [&] {
    if (!unused_calibration.empty())
      (progress ? *progress : std::cerr) << "decodelab: not using the calibration: " << unused_calibration << "\n";
  };
  const std::optional<DeviceSpec> cached = cached_device_spec(backend, threads);
  if (cached) {
    // A noisy cache is measured again once the machine is quiet, but not within minutes of its
    // measurement: a machine whose measurement comes out noisy while its check reads quiet (a
    // virtual machine whose memory runs at other speeds from period to period) would otherwise be measured
    // again, silently, by every command — each bug of a lab.
    const bool quiet_now = machine && !machine->contended;
    const bool measured_lately = std::time(nullptr) - cached->measured->measured_at < kRemeasureAfterSeconds;
    if (!cached->measured->noisy || !quiet_now || measured_lately) {
      say_unused_calibration();
      return *cached;
    }
    return measure_into_cache(backend, threads, progress, options, machine,
                              uncalibrated + " and its cached roofs were measured on a noisy machine, which is quiet now");
  }
  if (std::filesystem::exists(cache)) uncalibrated += " and the roof cache is for another machine or unreadable";
  return measure_into_cache(backend, threads, progress, options, machine, uncalibrated);
}

DeviceSpec measure_device_spec_uncached(Backend& backend, int threads, const RoofMeasureOptions& options,
                                        const MachineState* machine, std::ostream* progress) {
  RoofMeasurement measurement = measure_roofs(backend, options, progress);
  if (machine) {
    measurement.machine_contended = machine->contended;
    measurement.probe_bandwidth = machine->probe_bandwidth;
    measurement.core_round_trip_ns = machine->core_round_trip_ns;
  }
  return measured_spec(backend.device_description(), identity_for(backend, threads), measurement);
}

DeviceSpec remeasure_device_spec(Backend& backend, int threads, const DeviceSpec& current, std::ostream* progress,
                                 const MachineState* machine, const RoofMeasureOptions& options) {
  if (!current.measured || current.measured->measured_at <= 0) return current;  // a datasheet: nothing to measure
  // Measured minutes ago: measuring again would only repeat it (the reading stays "suspect").
  if (std::time(nullptr) - current.measured->measured_at < kRemeasureAfterSeconds) return current;
  // A calibration is never measured again behind the user's back: the point is reported as
  // above its roof.
  if (!is_gpu_backend(backend) && find_calibration(backend, threads).spec) return current;
  return measure_into_cache(backend, threads, progress, options, machine, "a point ran above its roof");
}

}  // namespace decodelab
