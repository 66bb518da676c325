// The per-machine cache of measured roofs, and the roofs a run is held to by default. CPU
// roofs are measured once per machine (hostname, CPU model, threads) and kept in
// ~/.cache/decodelab/ — or $DECODELAB_CACHE_DIR — then read by every run.
// The one non-obvious choice: a new measurement is merged into the cached one figure by
// figure, keeping the better reading of each (the higher rate, the lower fixed cost),
// because contention only ever lowers a measured rate and raises a measured cost. Choosing
// whole measurements let a set with good roofs bring along fixed costs taken under load.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "profiling/device_spec.h"
#include "profiling/roof_measure.h"

namespace decodelab {

// This machine, as measured roofs are keyed: hostname, CPU model (/proc/cpuinfo), threads
// (0 = every core, resolved to the count).
MachineIdentity this_machine(int threads);
// $DECODELAB_CACHE_DIR, else $XDG_CACHE_HOME/decodelab, else ~/.cache/decodelab; then
// roofs-v<method>-<hostname>-<cpu model>-<threads>.yaml with unsafe characters replaced
// (the method version changes when the way roofs are measured does, so an older
// measurement is not reused).
std::filesystem::path roof_cache_path(const MachineIdentity& machine);

// Two measurements of one machine merged figure by figure ("a good roof is never replaced
// by a worse one"): the higher of each rate (bandwidth_bytes_per_s, flops_per_s.*,
// matmul_flops_per_s.*, each decode_matmul, the cache's bandwidth_bytes_per_s,
// host_link_bytes_per_s) and the lower of each fixed cost (host_launch_s, op_overhead_s,
// sync_round_trip_s); a figure one side lacks comes from the other. The merged set is noisy
// only when both were; it takes the fresh measurement's provenance (time, probe, source)
// with the figures kept from the cached one named in each source line.
struct MergedRoofs {
  DeviceSpec spec;
  std::vector<std::string> improved;  // figures the fresh measurement made better
  std::vector<std::string> kept;      // figures better in the cached measurement, kept from it
  // Whether the cache should be rewritten: a figure improved, or a quiet measurement
  // confirmed a noisy cache (which is then no longer measured again on every quiet run).
  bool changed = false;
};
MergedRoofs merge_measured_specs(const DeviceSpec& fresh, const DeviceSpec& cached);

// The cached measurement for this backend's machine and thread count, if any (nothing is
// measured). CUDA devices with a configs/devices spec have none.
std::optional<DeviceSpec> cached_device_spec(Backend& backend, int threads);

// Merges `fresh` into the cache file (merge_measured_specs), writes it when it changed, and
// says on `progress` what improved and what was kept; returns the spec to use, with the
// figures exactly as the cache holds them (rounded in YAML).
DeviceSpec cache_measured_spec(const DeviceSpec& fresh, const std::optional<DeviceSpec>& cached,
                               const std::filesystem::path& cache, std::ostream* progress);

// The roofs a run on this backend is held to by default:
//  - CUDA: the configs/devices spec matching the device name (datasheet, plus measured
//    reference figures where the file has them); an unknown GPU is measured and cached.
//  - CPU: the cached measurement for this machine and thread count; measured on first
//    use, and measured again while the cached one is noisy and the machine (`machine`,
//    the check taken before timing, when given) is quiet, merged into the cache.
struct MachineState;
DeviceSpec default_device_spec(Backend& backend, int threads, std::ostream* progress = nullptr,
                               const RoofMeasureOptions& options = {}, const MachineState* machine = nullptr);

// Measures the roofs again now (a point ran above its roof and the roofs are suspect) and
// merges them into the cache; returns the spec to analyse with. Roofs measured less than
// 10 minutes ago are kept as they are.
DeviceSpec remeasure_device_spec(Backend& backend, int threads, const DeviceSpec& current, std::ostream* progress,
                                 const MachineState* machine);

}  // namespace decodelab
