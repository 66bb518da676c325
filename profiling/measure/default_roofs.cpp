// The roofs a command is held to by default (see default_roofs.h): the calibration, made
// first where there is none, a GPU's device file, or an unknown GPU's roofs measured now.
#include "profiling/measure/default_roofs.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <ostream>

#include "profiling/measure/calibration.h"
#include "profiling/measure/kernel_variant_choice.h"
#include "profiling/measure/machine_check.h"

namespace decodelab {

std::optional<DeviceSpec> calibrated_device_spec(const Backend& backend, int threads) {
  if (is_gpu_backend(backend)) return std::nullopt;
  return find_calibration(backend, threads).spec;
}

DeviceSpec measure_device_spec_now(Backend& backend, int threads, const RoofMeasureOptions& options,
                                   const MachineState* machine, std::ostream* progress) {
  RoofMeasurement measurement = measure_roofs(backend, options, progress);
  if (machine) {
    measurement.machine_contended = machine->contended;
    measurement.probe_bandwidth = machine->probe_bandwidth;
    measurement.core_round_trip_ns = machine->core_round_trip_ns;
  }
  MachineIdentity identity = this_machine(threads);
  if (is_gpu_backend(backend)) identity.cpu_model = backend.device_description();  // the GPU is what was measured
  return measured_spec(backend.device_description(), identity, measurement);
}

DeviceSpec default_device_spec(Backend& backend, int threads, std::ostream* progress, const RoofMeasureOptions& options,
                               const MachineState* machine) {
  // Nothing is measured in silence: what is about to be measured and why, its steps, then how
  // long it took go to `progress`, or to stderr when the caller shows no progress.
  std::ostream& notice = progress ? *progress : std::cerr;
  const auto start = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return std::string(text);
  };
  if (is_gpu_backend(backend)) {
    if (std::optional<DeviceSpec> known = match_device_spec(backend.device_description())) return *known;
    notice << "decodelab: this GPU (" << backend.device_description()
           << ") has no configs/devices spec: measuring its roofs now (seconds; not kept, there is no GPU "
              "calibration yet)\n";
    notice.flush();
    DeviceSpec measured = measure_device_spec_now(backend, threads, options, machine, &notice);
    notice << "decodelab: measured the GPU's roofs in " << seconds_since_start() << " s\n";
    return measured;
  }
  const CalibrationLookup calibration = find_calibration(backend, threads);
  if (calibration.spec) return *calibration.spec;
  const int resolved_threads = this_machine(threads).threads;
  notice << "decodelab: this machine is not calibrated at " << resolved_threads << " kernel thread"
         << (resolved_threads == 1 ? "" : "s") << " (" << calibration.why_not
         << "): calibrating it now (tens of seconds; `decodelab calibrate --threads " << resolved_threads
         << "` does it ahead)\n";
  notice.flush();
  // The backend exists already, running its kernels: the calibration is of those, recorded as
  // not timed against the others (`decodelab calibrate` chooses by timing each).
  KernelVariantChoice kernels;
  kernels.chosen = backend.kernel_variant();
  if (!kernels.chosen.empty()) {
    kernels.reason = kernels.chosen + ", the variant the command's CPU backend ran, not timed against the others "
                                      "(`decodelab calibrate` times each)";
  }
  const Calibration made = calibrate_to_file(backend, threads, calibration.file, options, &notice, machine, kernels);
  notice << "decodelab: calibrated in " << seconds_since_start() << " s, written to " << calibration.file.string()
         << "\n";
  return made.spec;
}

}  // namespace decodelab
