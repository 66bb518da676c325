// The per-machine cache of measured roofs (see roof_cache.h): where it lives, how a new
// measurement is merged into it figure by figure, and the roofs a run is held to by default.
#include "profiling/roof_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <ostream>
#include <thread>

#include "engine/errors.h"
#include "profiling/machine_check.h"
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
  std::filesystem::path directory;
  if (const char* override_directory = std::getenv("DECODELAB_CACHE_DIR"); override_directory && *override_directory) {
    directory = override_directory;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    directory = std::filesystem::path(xdg) / "decodelab";
  } else {
    const char* home = std::getenv("HOME");
    directory = std::filesystem::path(home && *home ? home : "/tmp") / ".cache" / "decodelab";
  }
  std::string name = "roofs-v" + std::to_string(kRoofMethodVersion) + "-" + machine.hostname + "-" + machine.cpu_model + "-" + std::to_string(machine.threads);
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

// "2026-12-01 22:19 UTC"
std::string utc_minute(int64_t seconds) {
  if (seconds <= 0) return "an unknown time";
  const std::time_t at = static_cast<std::time_t>(seconds);
  std::tm parts{};
  gmtime_r(&at, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &parts);
  return text;
}

// Figure-by-figure merging: each call keeps the better of the fresh value (in place) and
// the cached one, and records which side it came from under the figure's name.
class FigureMerger {
 public:
  // A rate: the higher is better; 0 = not measured.
  void rate(const std::string& name, double& fresh, double cached) {
    if (fresh <= 0 && cached <= 0) return;
    take(name, fresh, cached, cached > fresh);
  }
  // A fixed cost: the lower is better; 0 = not measured.
  void cost(const std::string& name, double& fresh, double cached) {
    if (fresh <= 0 && cached <= 0) return;
    take(name, fresh, cached, fresh <= 0 || (cached > 0 && cached < fresh));
  }
  std::vector<std::string> improved;
  std::vector<std::string> kept;

 private:
  void take(const std::string& name, double& fresh, double cached, bool cached_is_better) {
    if (cached_is_better) {
      fresh = cached;
      kept.push_back(name);
    } else if (fresh != cached) {
      improved.push_back(name);
    }
  }
};

void merge_roofs(Roofs& fresh, const Roofs& cached, FigureMerger& merger) {
  merger.rate("bandwidth_bytes_per_s", fresh.bandwidth, cached.bandwidth);
  merger.rate("flops_per_s.fp32", fresh.fp32_flops, cached.fp32_flops);
  merger.rate("flops_per_s.tf32", fresh.tf32_flops, cached.tf32_flops);
  merger.rate("flops_per_s.fp16", fresh.fp16_flops, cached.fp16_flops);
  merger.rate("flops_per_s.bf16", fresh.bf16_flops, cached.bf16_flops);
  merger.rate("matmul_flops_per_s.fp32", fresh.matmul_fp32_flops, cached.matmul_fp32_flops);
  merger.rate("matmul_flops_per_s.fp16", fresh.matmul_fp16_flops, cached.matmul_fp16_flops);
  merger.rate("matmul_flops_per_s.bf16", fresh.matmul_bf16_flops, cached.matmul_bf16_flops);
  merger.cost("matmul_output_s.fp32", fresh.matmul_output_fp32_s, cached.matmul_output_fp32_s);
  merger.cost("matmul_output_s.fp16", fresh.matmul_output_fp16_s, cached.matmul_output_fp16_s);
  merger.cost("matmul_output_s.bf16", fresh.matmul_output_bf16_s, cached.matmul_output_bf16_s);
  // Each (precision, rows) ceiling on its own; one that only the cache has is kept.
  for (const Roofs::DecodeMatmulCeiling& old_ceiling : cached.decode_matmul_ceilings) {
    auto same = [&](const Roofs::DecodeMatmulCeiling& c) {
      return c.precision == old_ceiling.precision && c.rows == old_ceiling.rows;
    };
    auto found = std::find_if(fresh.decode_matmul_ceilings.begin(), fresh.decode_matmul_ceilings.end(), same);
    if (found == fresh.decode_matmul_ceilings.end()) {
      fresh.decode_matmul_ceilings.push_back(Roofs::DecodeMatmulCeiling{old_ceiling.precision, old_ceiling.rows, 0});
      found = std::prev(fresh.decode_matmul_ceilings.end());
    }
    merger.rate("decode_matmul " + std::string(precision_name(old_ceiling.precision)) + "×" + std::to_string(old_ceiling.rows),
                found->bandwidth, old_ceiling.bandwidth);
  }
  std::sort(fresh.decode_matmul_ceilings.begin(), fresh.decode_matmul_ceilings.end(),
            [](const Roofs::DecodeMatmulCeiling& a, const Roofs::DecodeMatmulCeiling& b) {
              return std::make_pair(static_cast<int>(a.precision), a.rows) <
                     std::make_pair(static_cast<int>(b.precision), b.rows);
            });
}

void merge_fixed_costs(FixedCosts& fresh, const FixedCosts& cached, FigureMerger& merger) {
  merger.cost("host_launch_s", fresh.host_launch, cached.host_launch);
  merger.cost("op_overhead_s", fresh.op_overhead, cached.op_overhead);
  merger.cost("sync_round_trip_s", fresh.sync_round_trip, cached.sync_round_trip);
  merger.rate("host_link_bytes_per_s", fresh.host_link_bandwidth, cached.host_link_bandwidth);
}

// Appends to a source line which of its figures came from the older measurement.
void note_kept(std::string& source, const std::vector<std::string>& kept, const std::string& when) {
  if (!kept.empty()) source += "; better in the measurement of " + when + " and kept from it: " + format_list(kept);
}

}  // namespace

MergedRoofs merge_measured_specs(const DeviceSpec& fresh, const DeviceSpec& cached) {
  MergedRoofs merged{fresh, {}, {}, true};
  if (!cached.measured || !fresh.measured) return merged;
  DeviceSpec& spec = merged.spec;
  const std::string when = utc_minute(cached.measured->measured_at);

  FigureMerger roofs;
  merge_roofs(*spec.measured, *cached.measured, roofs);
  note_kept(spec.measured->source, roofs.kept, when);

  FigureMerger costs;
  if (cached.measured_fixed_costs) {
    if (!spec.measured_fixed_costs) spec.measured_fixed_costs = FixedCosts{};
    merge_fixed_costs(*spec.measured_fixed_costs, *cached.measured_fixed_costs, costs);
    note_kept(spec.measured_fixed_costs->source, costs.kept, when);
  }

  FigureMerger cache;
  if (cached.measured_cache) {
    if (!spec.measured_cache) spec.measured_cache = *cached.measured_cache;
    cache.rate("cache bandwidth_bytes_per_s", spec.measured_cache->bandwidth, cached.measured_cache->bandwidth);
    note_kept(spec.measured_cache->source, cache.kept, when);
  }

  for (const FigureMerger* part : {&roofs, &costs, &cache}) {
    merged.improved.insert(merged.improved.end(), part->improved.begin(), part->improved.end());
    merged.kept.insert(merged.kept.end(), part->kept.begin(), part->kept.end());
  }
  // One steady measurement in the mix makes the set steady: the other's figures are taken
  // only where they are better, and noise never raised a measured rate.
  Roofs& roofs_out = *spec.measured;
  const Roofs& old = *cached.measured;
  roofs_out.noisy = fresh.measured->noisy && old.noisy;
  if (fresh.measured->noisy && !old.noisy) roofs_out.spread = old.spread;
  if (fresh.measured->noisy && old.noisy) roofs_out.spread = std::min(fresh.measured->spread, old.spread);
  merged.changed = !merged.improved.empty() || roofs_out.noisy != old.noisy;
  if (!merged.changed) merged.spec = cached;  // nothing better: the cache stays as it was
  return merged;
}

std::optional<DeviceSpec> cached_device_spec(Backend& backend, int threads) {
  if (is_gpu_backend(backend) && match_device_spec(backend.device_description())) return std::nullopt;
  const MachineIdentity machine = identity_for(backend, threads);
  const std::filesystem::path cache = roof_cache_path(machine);
  std::error_code error;
  if (!std::filesystem::exists(cache, error)) return std::nullopt;
  try {
    DeviceSpec cached = load_device_spec(cache);
    if (cached.machine == machine && cached.measured) {
      if (!is_gpu_backend(backend) && cached.cache_bytes <= 0) cached.cache_bytes = host_cache_bytes();
      return cached;
    }
  } catch (const InputError&) {
  }
  return std::nullopt;
}

DeviceSpec cache_measured_spec(const DeviceSpec& fresh, const std::optional<DeviceSpec>& cached,
                               const std::filesystem::path& cache, std::ostream* progress) {
  MergedRoofs merged = cached && cached->measured ? merge_measured_specs(fresh, *cached) : MergedRoofs{fresh, {}, {}, true};
  if (!merged.changed) {
    if (progress) {
      *progress << "kept the cached roofs (" << cache.string()
                << "): no figure of the new measurement is better (contention only lowers a rate and raises a cost)\n";
    }
    return *cached;
  }
  try {
    save_device_spec(merged.spec, cache);
    if (progress && cached && cached->measured) {
      *progress << "cached the new roofs";
      if (!merged.improved.empty()) *progress << "; better now: " << format_list(merged.improved);
      if (!merged.kept.empty()) *progress << "; kept from the cached measurement, better there: " << format_list(merged.kept);
      *progress << "\n";
    }
  } catch (const std::exception& error) {
    if (progress) *progress << "could not cache the roofs: " << error.what() << "\n";
  }
  // The figures as the cache holds them (rounded in YAML), so the run that measured reads,
  // prices and predicts with exactly what every later run reads back.
  return parse_device_spec(device_spec_to_yaml(merged.spec), cache.string());
}

namespace {

DeviceSpec measure_into_cache(Backend& backend, int threads, std::ostream* progress, const RoofMeasureOptions& options,
                              const MachineState* machine, const std::optional<DeviceSpec>& cached) {
  const MachineIdentity identity = identity_for(backend, threads);
  const std::filesystem::path cache = roof_cache_path(identity);
  RoofMeasurement measurement = measure_roofs(backend, options, progress);
  if (machine) {
    measurement.machine_contended = machine->contended;
    measurement.probe_bandwidth = machine->probe_bandwidth;
  }
  DeviceSpec spec = measured_spec(backend.device_description(), identity, measurement);
  if (!is_gpu_backend(backend)) spec.cache_bytes = host_cache_bytes();
  return cache_measured_spec(spec, cached, cache, progress);
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
  const std::optional<DeviceSpec> cached = cached_device_spec(backend, threads);
  if (cached) {
    // A noisy cache is measured again once the machine is quiet, but not within minutes of its
    // measurement: a machine whose measurement comes out noisy while its check reads quiet (a
    // VM whose memory runs at other speeds from period to period) would otherwise be measured
    // again, silently, by every command — each bug of a lab.
    const bool quiet_now = machine && !machine->contended;
    const bool measured_lately = std::time(nullptr) - cached->measured->measured_at < kRemeasureAfterSeconds;
    if (!cached->measured->noisy || !quiet_now || measured_lately) return *cached;
    if (progress) *progress << "the cached roofs were measured on a noisy machine; measuring again now that it is quiet\n";
  } else if (std::filesystem::exists(cache)) {
    if (progress) *progress << "roof cache " << cache.string() << " is for another machine or unreadable; measuring again\n";
  }
  if (progress) *progress << "measuring this device's roofs (cached in " << cache.string() << ")\n";
  return measure_into_cache(backend, threads, progress, options, machine, cached);
}

DeviceSpec remeasure_device_spec(Backend& backend, int threads, const DeviceSpec& current, std::ostream* progress,
                                 const MachineState* machine) {
  if (!current.measured || current.measured->measured_at <= 0) return current;  // a datasheet: nothing to measure
  // Measured minutes ago: measuring again would only repeat it (the reading stays "suspect").
  if (std::time(nullptr) - current.measured->measured_at < kRemeasureAfterSeconds) return current;
  if (progress) *progress << "a point ran above its roof: measuring the roofs again\n";
  std::optional<DeviceSpec> cached = cached_device_spec(backend, threads);
  if (!cached) cached = current;
  return measure_into_cache(backend, threads, progress, {}, machine, cached);
}

}  // namespace decodelab
