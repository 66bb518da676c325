// The per-machine cache of measured roofs (see roof_cache.h): where it lives, how a new
// measurement is merged into it (groups of rates whole, fixed costs figure by figure), and
// the roofs a run is held to by default.
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

#include "engine/errors.h"
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

// Merging one part of a spec (the roofs, the fixed costs, the cache): each figure ends up
// with the fresh value (in place) or the cached one, and its name is recorded by where it
// came from and whether it was better there.
class FigureMerger {
 public:
  // A rate merged on its own: the higher is better; 0 = not measured.
  void rate(const std::string& name, double& fresh, double cached) {
    if (fresh <= 0 && cached <= 0) return;
    take(name, fresh, cached, cached > fresh);
  }
  // A fixed cost merged on its own: the lower is better; 0 = not measured.
  void cost(const std::string& name, double& fresh, double cached) {
    if (fresh <= 0 && cached <= 0) return;
    take(name, fresh, cached, fresh <= 0 || (cached > 0 && cached < fresh));
  }
  // A figure of a group merged as a whole (merge_group): from the side the group came from,
  // unless only the other side has it.
  void from_group(const std::string& name, double& fresh, double cached, bool higher_is_better, bool take_fresh) {
    if (fresh <= 0 && cached <= 0) return;
    if (fresh <= 0) return take(name, fresh, cached, true);   // only the cache has it
    if (cached <= 0) return take(name, fresh, cached, false);  // only the fresh measurement has it
    const bool fresh_better = higher_is_better ? fresh > cached : fresh < cached;
    const bool cached_better = higher_is_better ? cached > fresh : cached < fresh;
    if (take_fresh) {
      if (fresh_better) improved.push_back(name);
      if (cached_better) taken_with_group.push_back(name);
    } else {
      if (cached_better) kept.push_back(name);
      if (fresh_better) kept_with_group.push_back(name);
      fresh = cached;
    }
  }
  std::vector<std::string> improved;          // from the fresh measurement, better (or only) there
  std::vector<std::string> kept;              // from the cached measurement, better (or only) there
  std::vector<std::string> taken_with_group;  // from the fresh measurement with its group, though worse there
  std::vector<std::string> kept_with_group;   // from the cached measurement with its group, though better now

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

// A figure of a group: its name, the fresh value (merged in place), the cached one, which
// way is better, and the part of the spec it belongs to.
struct GroupFigure {
  std::string name;
  double* fresh;
  double cached;
  bool higher_is_better;
  FigureMerger* part;
};

// A group of figures the prediction divides by each other, kept or replaced as a whole
// (MergedRoofs::GroupChoice): the fresh one replaces the cached one when its figures are
// better on geometric mean over those both sides have (each rate fresh / cached, each cost
// cached / fresh); figures only one side has fill in from it either way.
MergedRoofs::GroupChoice merge_group(const std::string& group, const std::vector<GroupFigure>& figures) {
  double log_sum = 0;
  int shared = 0;
  for (const GroupFigure& figure : figures) {
    if (*figure.fresh <= 0 || figure.cached <= 0) continue;
    log_sum += figure.higher_is_better ? std::log(*figure.fresh / figure.cached) : std::log(figure.cached / *figure.fresh);
    ++shared;
  }
  MergedRoofs::GroupChoice choice{group, false, shared > 0 ? std::exp(log_sum / shared) : 1.0, shared};
  choice.fresh = shared > 0 && log_sum > 0;  // a tie keeps the cache
  for (const GroupFigure& figure : figures)
    figure.part->from_group(figure.name, *figure.fresh, figure.cached, figure.higher_is_better, choice.fresh);
  return choice;
}

std::string decode_matmul_name(Precision precision, int rows) {
  return "decode_matmul " + std::string(precision_name(precision)) + "×" + std::to_string(rows);
}
std::string decode_attention_name(Precision precision, int context) {
  return "decode_attention " + std::string(precision_name(precision)) + "@" + std::to_string(context);
}

// A ceiling table (decode matmuls by rows, decode attention by context) as group figures:
// every entry of either side, one the fresh measurement lacks added to it (filled from the
// cache by the group), sorted by precision and extent.
template <typename Ceiling>
void add_ceilings(std::vector<Ceiling>& fresh, const std::vector<Ceiling>& cached, int Ceiling::*extent,
                  std::string (*name)(Precision, int), FigureMerger& part, std::vector<GroupFigure>& figures) {
  for (const Ceiling& old_ceiling : cached) {
    auto same = [&](const Ceiling& c) { return c.precision == old_ceiling.precision && c.*extent == old_ceiling.*extent; };
    if (std::find_if(fresh.begin(), fresh.end(), same) == fresh.end()) {
      Ceiling missing = old_ceiling;
      missing.bandwidth = 0;
      fresh.push_back(missing);
    }
  }
  std::sort(fresh.begin(), fresh.end(), [&](const Ceiling& a, const Ceiling& b) {
    return std::make_pair(static_cast<int>(a.precision), a.*extent) < std::make_pair(static_cast<int>(b.precision), b.*extent);
  });
  for (Ceiling& ceiling : fresh) {
    double old_value = 0;
    for (const Ceiling& old_ceiling : cached)
      if (old_ceiling.precision == ceiling.precision && old_ceiling.*extent == ceiling.*extent) old_value = old_ceiling.bandwidth;
    figures.push_back({name(ceiling.precision, ceiling.*extent), &ceiling.bandwidth, old_value, true, &part});
  }
}

// The streaming rates: the bandwidth roof and every decode-matmul and decode-attention
// rate. Each prices a decode op's bytes, and a bug's predicted slowdown is largely their
// ratios (fp32 against fp16 one-row matmuls, one row against eight, attention against the
// matmuls), so they come from one measurement: a shared machine's memory bandwidth can move
// by a third from period to period, and per-figure bests from two periods make wrong ratios.
std::vector<GroupFigure> streaming_figures(Roofs& fresh, const Roofs& cached, FigureMerger& part) {
  std::vector<GroupFigure> figures{{"bandwidth_bytes_per_s", &fresh.bandwidth, cached.bandwidth, true, &part}};
  add_ceilings(fresh.decode_matmul_ceilings, cached.decode_matmul_ceilings, &Roofs::DecodeMatmulCeiling::rows,
               decode_matmul_name, part, figures);
  add_ceilings(fresh.decode_attention_ceilings, cached.decode_attention_ceilings, &Roofs::DecodeAttentionCeiling::context,
               decode_attention_name, part, figures);
  return figures;
}

// The in-core rates: the compute roofs, the matmul ceilings with their cost per output
// (each dtype's pair is one fit of two timings) and the cache's bandwidth (an fp16 product
// resident in the cache, bound by the cores widening it). They price prefills and a
// cache-resident model (lab-tiny), where the fp32 against the fp16 ceiling and the ceilings
// against the cache's bandwidth are the slowdown's ratios; they move with the CPU time the
// machine gives, not with its memory bandwidth, so they are a group of their own.
std::vector<GroupFigure> compute_figures(Roofs& fresh, const Roofs& cached, FigureMerger& part) {
  return {{"flops_per_s.fp32", &fresh.fp32_flops, cached.fp32_flops, true, &part},
          {"flops_per_s.tf32", &fresh.tf32_flops, cached.tf32_flops, true, &part},
          {"flops_per_s.fp16", &fresh.fp16_flops, cached.fp16_flops, true, &part},
          {"flops_per_s.bf16", &fresh.bf16_flops, cached.bf16_flops, true, &part},
          {"matmul_flops_per_s.fp32", &fresh.matmul_fp32_flops, cached.matmul_fp32_flops, true, &part},
          {"matmul_flops_per_s.fp16", &fresh.matmul_fp16_flops, cached.matmul_fp16_flops, true, &part},
          {"matmul_flops_per_s.bf16", &fresh.matmul_bf16_flops, cached.matmul_bf16_flops, true, &part},
          {"matmul_output_s.fp32", &fresh.matmul_output_fp32_s, cached.matmul_output_fp32_s, false, &part},
          {"matmul_output_s.fp16", &fresh.matmul_output_fp16_s, cached.matmul_output_fp16_s, false, &part},
          {"matmul_output_s.bf16", &fresh.matmul_output_bf16_s, cached.matmul_output_bf16_s, false, &part}};
}

// The fixed costs, each on its own: they are added to op times, not divided by the rates,
// and contention raises them ten- to a thousandfold, so the best reading of each is kept.
void merge_fixed_costs(FixedCosts& fresh, const FixedCosts& cached, FigureMerger& merger) {
  merger.cost("host_launch_s", fresh.host_launch, cached.host_launch);
  merger.cost("op_overhead_s", fresh.op_overhead, cached.op_overhead);
  merger.cost("sync_round_trip_s", fresh.sync_round_trip, cached.sync_round_trip);
  merger.cost("parallel_region_s", fresh.parallel_region, cached.parallel_region);
  merger.rate("host_link_bytes_per_s", fresh.host_link_bandwidth, cached.host_link_bandwidth);
}

// Appends to a source line which of its figures came from the older measurement.
void note_kept(std::string& source, const FigureMerger& part, const std::string& when) {
  if (!part.kept.empty()) source += "; better in the measurement of " + when + " and kept from it: " + format_list(part.kept);
  if (!part.kept_with_group.empty()) {
    source += "; kept from the measurement of " + when + " with their group, though better in this one: " +
              format_list(part.kept_with_group);
  }
}

// "streaming rates taken (new / cached ×1.12 over 19 figures), compute rates kept (×0.95 over 10)"
std::string describe_groups(const std::vector<MergedRoofs::GroupChoice>& groups) {
  std::string text;
  for (const MergedRoofs::GroupChoice& choice : groups) {
    if (!text.empty()) text += ", ";
    text += choice.group + (choice.fresh ? " taken" : " kept");
    if (choice.shared > 0) {
      text += " (new / cached ×" + format_number(choice.ratio) + " on geometric mean over " + std::to_string(choice.shared) +
              " figure" + (choice.shared == 1 ? "" : "s") + ")";
    }
  }
  return text;
}

}  // namespace

std::string merge_summary(const MergedRoofs& merged) {
  std::string text = describe_groups(merged.groups);
  auto add = [&](const char* what, const std::vector<std::string>& names) {
    if (!names.empty()) text += std::string("; ") + what + ": " + format_list(names);
  };
  add("better now", merged.improved);
  add("taken with their group, though better in the cached measurement", merged.taken_with_group);
  add("kept from the cached measurement, better there", merged.kept);
  add("kept from the cached measurement with their group, though better now", merged.kept_with_group);
  return text;
}

MergedRoofs merge_measured_specs(const DeviceSpec& fresh, const DeviceSpec& cached) {
  MergedRoofs merged;
  merged.spec = fresh;
  merged.changed = true;
  if (!cached.measured || !fresh.measured) return merged;
  DeviceSpec& spec = merged.spec;
  const std::string when = utc_minute(cached.measured->measured_at);

  FigureMerger roofs, costs, cache;
  merged.groups.push_back(merge_group("streaming rates", streaming_figures(*spec.measured, *cached.measured, roofs)));
  std::vector<GroupFigure> compute = compute_figures(*spec.measured, *cached.measured, roofs);
  if (cached.measured_cache && !spec.measured_cache) {
    spec.measured_cache = *cached.measured_cache;
    spec.measured_cache->bandwidth = 0;  // filled from the cache by the group
  }
  if (spec.measured_cache) {
    compute.push_back({"cache bandwidth_bytes_per_s", &spec.measured_cache->bandwidth,
                       cached.measured_cache ? cached.measured_cache->bandwidth : 0.0, true, &cache});
  }
  merged.groups.push_back(merge_group("compute rates", compute));
  // The cache's capacity was checked with the measurement its bandwidth comes from.
  if (!merged.groups.back().fresh && cached.measured_cache && spec.measured_cache) {
    spec.measured_cache->bytes = cached.measured_cache->bytes;
    spec.measured_cache->source = cached.measured_cache->source;
  }
  if (spec.measured_cache) spec.cache_bytes = spec.measured_cache->bytes;
  note_kept(spec.measured->source, roofs, when);
  if (spec.measured_cache) note_kept(spec.measured_cache->source, cache, when);

  if (cached.measured_fixed_costs) {
    if (!spec.measured_fixed_costs) spec.measured_fixed_costs = FixedCosts{};
    merge_fixed_costs(*spec.measured_fixed_costs, *cached.measured_fixed_costs, costs);
    note_kept(spec.measured_fixed_costs->source, costs, when);
  }

  for (const FigureMerger* part : {&roofs, &costs, &cache}) {
    auto append = [](std::vector<std::string>& to, const std::vector<std::string>& from) {
      to.insert(to.end(), from.begin(), from.end());
    };
    append(merged.improved, part->improved);
    append(merged.kept, part->kept);
    append(merged.taken_with_group, part->taken_with_group);
    append(merged.kept_with_group, part->kept_with_group);
  }
  // One steady measurement in the mix makes the set steady: the other's groups and figures
  // are taken only where they are better, and noise never raised a measured rate.
  Roofs& roofs_out = *spec.measured;
  const Roofs& old = *cached.measured;
  roofs_out.noisy = fresh.measured->noisy && old.noisy;
  if (fresh.measured->noisy && !old.noisy) roofs_out.spread = old.spread;
  if (fresh.measured->noisy && old.noisy) roofs_out.spread = std::min(fresh.measured->spread, old.spread);
  merged.changed = !merged.improved.empty() || !merged.taken_with_group.empty() || roofs_out.noisy != old.noisy;
  if (!merged.changed) merged.spec = cached;  // nothing better: the cache stays as it was
  return merged;
}

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

DeviceSpec cache_measured_spec(const DeviceSpec& fresh, const std::optional<DeviceSpec>& cached,
                               const std::filesystem::path& cache, std::ostream* progress) {
  MergedRoofs merged;
  if (cached && cached->measured) {
    merged = merge_measured_specs(fresh, *cached);
  } else {
    merged.spec = fresh;
    merged.changed = true;
  }
  if (!merged.changed) {
    if (progress) {
      *progress << "kept the cached roofs (" << cache.string() << "): no fixed cost of the new measurement is better, "
                << "nor any group of rates better overall (" << merge_summary(merged)
                << "; contention only lowers a rate and raises a cost)\n";
    }
    return *cached;
  }
  try {
    save_device_spec(merged.spec, cache);
    if (progress && cached && cached->measured) *progress << "cached the new roofs (" << merge_summary(merged) << ")\n";
  } catch (const std::exception& error) {
    if (progress) *progress << "could not cache the roofs: " << error.what() << "\n";
  }
  // The figures as the cache holds them (rounded in YAML), so the run that measured reads,
  // prices and predicts with exactly what every later run reads back.
  return parse_device_spec(device_spec_to_yaml(merged.spec), cache.string());
}

namespace {

// Nothing is measured in silence: what is about to be measured and why goes to `progress`,
// or to stderr when the caller shows no progress, then how long it took.
DeviceSpec measure_into_cache(Backend& backend, int threads, std::ostream* progress, const RoofMeasureOptions& options,
                              const MachineState* machine, const std::optional<DeviceSpec>& cached,
                              const std::string& why) {
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
  // The calibration, when it describes this machine, is what every command is held to.
  std::string uncalibrated = "this GPU has no configs/devices spec";
  if (!is_gpu_backend(backend)) {
    CalibrationLookup calibration = find_calibration(backend, threads);
    if (calibration.spec) return *calibration.spec;
    uncalibrated = "this machine is not calibrated (" + calibration.why_not + ")";
    // A calibration that is there but not this machine's is said even when the roof cache
    // answers: the user calibrated and should learn why it is not used.
    if (calibration.exists) {
      (progress ? *progress : std::cerr) << "decodelab: not using the calibration: " << calibration.why_not << "\n";
    }
  }
  const std::optional<DeviceSpec> cached = cached_device_spec(backend, threads);
  if (cached) {
    // A noisy cache is measured again once the machine is quiet, but not within minutes of its
    // measurement: a machine whose measurement comes out noisy while its check reads quiet (a
    // virtual machine whose memory runs at other speeds from period to period) would otherwise be measured
    // again, silently, by every command — each bug of a lab.
    const bool quiet_now = machine && !machine->contended;
    const bool measured_lately = std::time(nullptr) - cached->measured->measured_at < kRemeasureAfterSeconds;
    if (!cached->measured->noisy || !quiet_now || measured_lately) return *cached;
    return measure_into_cache(backend, threads, progress, options, machine, cached,
                              uncalibrated + " and its cached roofs were measured on a noisy machine, which is quiet now");
  }
  if (std::filesystem::exists(cache)) uncalibrated += " and the roof cache is for another machine or unreadable";
  return measure_into_cache(backend, threads, progress, options, machine, cached, uncalibrated);
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
  std::optional<DeviceSpec> cached = cached_device_spec(backend, threads);
  if (!cached) cached = current;
  return measure_into_cache(backend, threads, progress, options, machine, cached, "a point ran above its roof");
}

}  // namespace decodelab
