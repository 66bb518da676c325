// The per-machine cache of measured roofs, the fallback of a machine without a calibration
// (profiling/measure/calibration.h), and the roofs a run is held to by default. CPU roofs
// are measured on first use per machine (hostname, CPU model, threads) — said on stderr —
// and kept in the calibration's folder, ~/.cache/decodelab/ or $DECODELAB_CACHE_DIR, then
// read by every run. A new measurement replaces the cached one whole.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "profiling/device_spec.h"
#include "profiling/measure/roof_measure.h"

namespace decodelab {

// This machine, as measured roofs are keyed: hostname, CPU model (/proc/cpuinfo), threads
// (0 = every core, resolved to the count).
MachineIdentity this_machine(int threads);
// $DECODELAB_CACHE_DIR, else $XDG_CACHE_HOME/decodelab, else ~/.cache/decodelab; then
// roofs-c<format>-<hostname>-<cpu model>-<threads>.yaml with unsafe characters replaced
// (the calibration's format version, kCalibrationFormat, changes when what the figures mean
// does, so an older measurement is not reused).
std::filesystem::path roof_cache_path(const MachineIdentity& machine);

// The calibration for this backend's machine and thread count, else the cached measurement,
// if any (nothing is measured). CUDA devices with a configs/devices spec have none. A
// calibration file that cannot be read is an InputError.
std::optional<DeviceSpec> cached_device_spec(Backend& backend, int threads);

// Writes `fresh` to the cache file, replacing what was there (nothing is merged: every
// figure, and every ratio of two the prediction takes, is one measurement's), and returns the
// spec to use, with the figures exactly as the cache holds them (rounded in YAML).
DeviceSpec cache_measured_spec(const DeviceSpec& fresh, const std::filesystem::path& cache, std::ostream* progress);

// The roofs a run on this backend is held to by default:
//  - CUDA: the configs/devices spec matching the device name (datasheet, plus measured
//    reference figures where the file has them); an unknown GPU is measured and cached.
//  - CPU: the calibration (profiling/measure/calibration.h) when it describes this machine
//    and thread count, never measured again; else the cached measurement for this machine
//    and thread count, measured on first use, and measured again while the cached one is
//    noisy and the machine (`machine`, the check taken before timing, when given) is quiet.
// Whatever is measured is said first, with why, on `progress` or else on stderr.
struct MachineState;
DeviceSpec default_device_spec(Backend& backend, int threads, std::ostream* progress = nullptr,
                               const RoofMeasureOptions& options = {}, const MachineState* machine = nullptr);

// The roofs measured now as `options` says (a quick measurement for a short budget, one
// that a checkpoint may abandon) and not cached: a cache holding a quick measurement would
// hold every later run to it.
DeviceSpec measure_device_spec_uncached(Backend& backend, int threads, const RoofMeasureOptions& options,
                                        const MachineState* machine, std::ostream* progress = nullptr);

// Measures the roofs again now (a point ran above its roof and the roofs are suspect) into
// the cache; returns the spec to analyse with. Roofs measured less than 10 minutes ago, and a
// calibration, are kept as they are.
DeviceSpec remeasure_device_spec(Backend& backend, int threads, const DeviceSpec& current, std::ostream* progress,
                                 const MachineState* machine, const RoofMeasureOptions& options = {});

}  // namespace decodelab
