// `decodelab roofline`: the roofs a device is held to — peak bandwidth, peak FLOP/s per
// precision — and the ridge points where they meet. --device NAME shows a configs/devices
// spec; --measure measures this machine's roofs on a backend (and saves them with --save,
// or, without it, refreshes the per-machine cache runs use by default; --json writes every
// measured figure, e.g. the copy bandwidth the GPU check divides decode bandwidth by); with
// neither, the backend's default roofs are shown (CUDA: the matching spec; CPU: the
// calibration, else the cached measurement, measured on first use).
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <string>

#include "engine/backend.h"
#include "engine/base/errors.h"
#include "lab/cli/commands.h"
#include "lab/scenario/scenario.h"
#include "lab/output_files.h"
#include "lab/predict/row_prediction.h"
#include "lab/run/runner.h"
#include "profiling/atomic_file.h"
#include "profiling/device_spec.h"
#include "profiling/measure/calibration.h"
#include "profiling/measure/machine_check.h"
#include "profiling/report/printers.h"
#include "profiling/measure/roof_cache.h"
#include "profiling/measure/roof_measure.h"
#include "profiling/units.h"

namespace decodelab {

namespace {

BackendKind backend_kind(const std::string& name) {
  if (name == "cuda") return BackendKind::Cuda;
  if (name == "cpu") return BackendKind::Cpu;
  return cuda_device_available() ? BackendKind::Cuda : BackendKind::Cpu;
}

}  // namespace

void execute_roofline(const RooflineArguments& options) {
  if (!options.device.empty()) {
    std::fputs(format_device_roofs(named_device(options.device, "--device")).c_str(), stdout);
    return;
  }
  BackendOptions backend_options;
  backend_options.threads = options.threads;
  backend_options.cpu_kernels = calibrated_cpu_kernels();  // the kernels the calibration measured
  const std::unique_ptr<Backend> backend = make_backend(backend_kind(options.backend), backend_options);
  if (!options.measure) {
    // A noisy cached measurement is measured again when the machine is quiet now.
    const MachineState state = check_machine_for_timing(*backend, options.threads);
    std::fputs(format_device_roofs(default_device_spec(*backend, options.threads, &std::cerr, {}, &state)).c_str(), stdout);
    return;
  }

  if (!options.json_file.empty()) check_output_path(options.json_file, "--json");
  // The machine first: a contended machine's roofs are kept out of the cache.
  const std::optional<DeviceSpec> cached = cached_device_spec(*backend, options.threads);
  const MachineState state = check_machine_for_timing(*backend, options.threads);
  RoofMeasureOptions measure_options;
  measure_options.repeats = options.repeats;
  RoofMeasurement measurement = measure_roofs(*backend, measure_options, &std::cerr);
  measurement.machine_contended = state.contended;
  measurement.probe_bandwidth = state.probe_bandwidth;
  measurement.core_round_trip_ns = state.core_round_trip_ns;
  std::fputs(measurement.describe().c_str(), stdout);
  std::printf("machine    %s\n\n", state.summary().c_str());
  if (!options.json_file.empty()) {
    nlohmann::json json = to_json(measurement);
    json["backend"] = backend->name();
    json["device"] = backend->device_description();
    json["machine"] = {{"contended", state.contended}, {"summary", state.summary()}};
    save_file_atomically(options.json_file, json.dump(2) + "\n");
  }
  MachineIdentity machine = this_machine(options.threads);
  if (backend->name() == "cuda") machine.cpu_model = backend->device_description();
  DeviceSpec spec = measured_spec(backend->device_description(), machine, measurement);
  if (backend->name() == "cuda") {
    // A known GPU keeps its datasheet beside the new measurement, so both can be shown.
    if (std::optional<DeviceSpec> known = match_device_spec(backend->device_description())) {
      known->measured = spec.measured;
      known->measured_fixed_costs = spec.measured_fixed_costs;
      spec = *known;
    }
  }
  std::fputs(format_device_roofs(spec).c_str(), stdout);
  if (!options.save.empty()) {
    save_device_spec(spec, options.save);
    std::printf("\nsaved to %s\n", options.save.c_str());
    return;
  }
  // The cache the runs use, replaced whole; but not by a measurement of a busy machine, which
  // would hold every later run to roofs contention lowered.
  const std::filesystem::path target = roof_cache_path(machine);
  if (cached && cached->measured && state.contended) {
    std::printf("\nnot cached: the machine was busy while measuring (%s); runs keep using %s (%s). Measure again "
                "when it is quiet, or delete that file to start afresh.\n",
                state.summary().c_str(), target.c_str(), cached->roofs_provenance(std::time(nullptr)).c_str());
    return;
  }
  save_device_spec(spec, target);
  std::printf("\nsaved to %s (the roofs runs on this machine use without a calibration%s)\n", target.c_str(),
              cached && cached->measured ? "; the earlier measurement replaced whole" : "");
  if (backend->name() != "cuda") {
    if (const CalibrationLookup calibration = find_calibration(*backend, options.threads); calibration.spec) {
      std::printf("runs here read the calibration %s instead; `decodelab calibrate` measures it again\n",
                  calibration.file.c_str());
    }
  }
}

}  // namespace decodelab
