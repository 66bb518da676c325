// The per-machine cache of measured roofs, and the roofs a run is held to by default. CPU
// roofs are measured once per machine (hostname, CPU model, threads) and kept in
// ~/.cache/decodelab/ — or $DECODELAB_CACHE_DIR — then read by every run.
// The one non-obvious choice: a new measurement is merged into the cached one by groups of
// figures the prediction divides by each other — the streaming rates (bandwidth roof,
// decode matmuls, decode attention), the compute rates (compute roofs, matmul ceilings and
// their cost per output, the cache's bandwidth) — each kept or replaced as a whole, and the
// fixed costs figure by figure (the lower reading of each). Per-figure bests of rates from
// two periods of a machine whose memory bandwidth moves between them make wrong ratios; whole
// measurements let a set with good roofs bring along fixed costs taken under load.
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
// roofs-v<method>-<hostname>-<cpu model>-<threads>.yaml with unsafe characters replaced
// (the method version changes when the way roofs are measured does, so an older
// measurement is not reused).
std::filesystem::path roof_cache_path(const MachineIdentity& machine);

// Two measurements of one machine merged ("a good roof is never replaced by a worse one"):
//  - each group of rates is taken from the fresh measurement when it is better there overall
//    — the geometric mean of fresh / cached over the figures both have above 1 (a cost
//    counts as cached / fresh) — and kept whole from the cached one otherwise (a tie too);
//    a figure only one side has comes from that side either way. Groups: the streaming
//    rates (bandwidth_bytes_per_s, each decode_matmul, each decode_attention) and the
//    compute rates (flops_per_s.*, matmul_flops_per_s.*, matmul_output_s.*, the cache's
//    bandwidth_bytes_per_s).
//  - each fixed cost (host_launch_s, op_overhead_s, sync_round_trip_s; the rate
//    host_link_bytes_per_s) keeps its better reading on its own.
// The merged set is noisy only when both were; it takes the fresh measurement's provenance
// (time, probe, source) with the figures kept from the cached one named in each source line.
struct MergedRoofs {
  DeviceSpec spec;
  std::vector<std::string> improved;          // figures the fresh measurement made better (or added)
  std::vector<std::string> kept;              // figures better (or only) in the cached measurement, kept from it
  std::vector<std::string> taken_with_group;  // taken from the fresh measurement with their group, though worse there
  std::vector<std::string> kept_with_group;   // kept from the cached one with their group, though better now
  // How each group was decided: its name ("streaming rates", "compute rates"), whether the
  // fresh figures were taken, their geometric mean over the cached ones (rates; a cost
  // inverted) and how many figures both sides had.
  struct GroupChoice {
    std::string group;
    bool fresh = false;
    double ratio = 1;
    int shared = 0;
  };
  std::vector<GroupChoice> groups;
  // Whether the cache should be rewritten: a figure changed to the fresh value, or a quiet
  // measurement confirmed a noisy cache (which is then no longer measured again on every
  // quiet run).
  bool changed = false;
};
MergedRoofs merge_measured_specs(const DeviceSpec& fresh, const DeviceSpec& cached);
// How a merge went, for a progress line: each group taken or kept (with its geometric
// mean), then the figures better now, taken with their group though worse, kept because
// better in the cache, and kept with their group though better now, by name.
std::string merge_summary(const MergedRoofs& merged);

// The calibration for this backend's machine and thread count, else the cached measurement,
// if any (nothing is measured). CUDA devices with a configs/devices spec have none. A
// calibration file that cannot be read is an InputError.
std::optional<DeviceSpec> cached_device_spec(Backend& backend, int threads);

// Merges `fresh` into the cache file (merge_measured_specs), writes it when it changed, and
// says on `progress` what improved and what was kept; returns the spec to use, with the
// figures exactly as the cache holds them (rounded in YAML).
DeviceSpec cache_measured_spec(const DeviceSpec& fresh, const std::optional<DeviceSpec>& cached,
                               const std::filesystem::path& cache, std::ostream* progress);

// The roofs a run on this backend is held to by default:
//  - CUDA: the configs/devices spec matching the device name (datasheet, plus measured
//    reference figures where the file has them); an unknown GPU is measured and cached.
//  - CPU: the calibration (profiling/measure/calibration.h) when it describes this machine
//    and thread count, never measured again; else the cached measurement for this machine
//    and thread count, measured on first use, and measured again while the cached one is
//    noisy and the machine (`machine`, the check taken before timing, when given) is quiet,
//    merged into the cache.
// Whatever is measured is said first, with why, on `progress` or else on stderr.
struct MachineState;
DeviceSpec default_device_spec(Backend& backend, int threads, std::ostream* progress = nullptr,
                               const RoofMeasureOptions& options = {}, const MachineState* machine = nullptr);

// The roofs measured now as `options` says (a quick measurement for a short budget, one
// that a checkpoint may abandon) and not cached: a cache holding a quick measurement would
// hold every later run to it.
DeviceSpec measure_device_spec_uncached(Backend& backend, int threads, const RoofMeasureOptions& options,
                                        const MachineState* machine, std::ostream* progress = nullptr);

// Measures the roofs again now (a point ran above its roof and the roofs are suspect) and
// merges them into the cache; returns the spec to analyse with. Roofs measured less than
// 10 minutes ago are kept as they are.
DeviceSpec remeasure_device_spec(Backend& backend, int threads, const DeviceSpec& current, std::ostream* progress,
                                 const MachineState* machine, const RoofMeasureOptions& options = {});

}  // namespace decodelab
