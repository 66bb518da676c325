// The roofs a command is held to by default, read rather than measured:
//  - CPU: this machine's calibration at the command's kernel threads
//    (profiling/measure/calibration.h). Where there is none — no file, another machine's,
//    another format — the command says so on stderr in one line, with why, and calibrates
//    first (tens of seconds), with the procedure `decodelab calibrate` runs, into that file.
//  - CUDA: the configs/devices spec matching the device name (datasheet, plus measured
//    reference figures where the file has them). An unknown GPU has its roofs measured at the
//    start of the command (seconds), said on stderr, and not kept: there is no GPU
//    calibration file yet.
// Nothing measures in silence, and nothing measures again behind a command's back: a point
// above its roof is reported by the analysis (RunAnalysis::roofs_suspect), and only
// `decodelab calibrate` replaces a calibration.
#pragma once

#include <iosfwd>
#include <optional>

#include "engine/backend.h"
#include "profiling/device_spec.h"
#include "profiling/measure/roof_measure.h"

namespace decodelab {

struct MachineState;

// The calibration's spec for this CPU backend at `threads` when it describes this machine;
// none on a GPU or without one (nothing is measured). A calibration file that cannot be read
// is an InputError.
std::optional<DeviceSpec> calibrated_device_spec(const Backend& backend, int threads);

// The roofs a command on `backend` at `threads` kernel threads is held to (see above). What is
// measured is said first, with why, then its steps and how long it took, on `progress` or else
// on stderr. `machine`, the check taken before timing when given, is what a calibration
// made here records (else it checks the machine itself). `options` may carry a checkpoint that
// abandons the measurement (a stop, a deadline): then nothing is written.
DeviceSpec default_device_spec(Backend& backend, int threads, std::ostream* progress = nullptr,
                               const RoofMeasureOptions& options = {}, const MachineState* machine = nullptr);

// The roofs measured now as `options` says (a quick measurement for a short budget, one that
// a checkpoint may abandon) and kept nowhere: a calibration holding a quick measurement would
// hold every later command to it.
DeviceSpec measure_device_spec_now(Backend& backend, int threads, const RoofMeasureOptions& options,
                                   const MachineState* machine, std::ostream* progress = nullptr);

}  // namespace decodelab
