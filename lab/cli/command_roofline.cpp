// `decodelab roofline`: the roofs a device is held to — peak bandwidth, peak FLOP/s per
// precision — and the ridge points where they meet. --device NAME shows a configs/devices
// spec; --measure measures this machine's roofs on a backend now and prints them (--save
// writes them as a device spec, --json every measured figure, e.g. the copy bandwidth the
// GPU check divides decode bandwidth by), keeping them nowhere else: commands read the
// calibration, which `decodelab calibrate` replaces. With neither, the backend's default
// roofs are shown (CUDA: the matching spec; CPU: the calibration, made first where there is
// none).
#include <cstdio>
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
#include "profiling/measure/default_roofs.h"
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
  backend_options.cpu_kernels = calibrated_cpu_kernels(options.threads);  // the kernels the calibration measured
  const std::unique_ptr<Backend> backend = make_backend(backend_kind(options.backend), backend_options);
  if (!options.measure) {
    // The check goes into a calibration made first, where there is none.
    const MachineState state = check_machine_for_timing(*backend, options.threads);
    std::fputs(format_device_roofs(default_device_spec(*backend, options.threads, &std::cerr, {}, &state)).c_str(), stdout);
    return;
  }

  if (!options.json_file.empty()) check_output_path(options.json_file, "--json");
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
  }
  // Measured to be looked at (or saved with --save), never for the commands: they read the
  // calibration (a GPU, its device file), which only `decodelab calibrate` replaces.
  if (backend->name() == "cuda") {
    std::printf("\nnot kept: commands on this GPU read its configs/devices spec, or measure an "
                "unknown GPU's roofs at their start\n");
  } else {
    std::printf("\nnot kept: commands read the calibration %s, which `decodelab calibrate "
                "--threads %d` replaces\n",
                calibration_path(options.threads).c_str(), this_machine(options.threads).threads);
  }
}

}  // namespace decodelab
