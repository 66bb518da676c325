// The runner. Warm-ups are untimed and unobserved (no sink), so a trace holds only the
// steady state; weights come from the workload's seed, so the fixed twin of a scenario
// gets the same parameters and therefore the same tokens.
#include "lab/run/runner.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "engine/base/clock.h"
#include "engine/base/errors.h"
#include "engine/checkpoint/hf_checkpoint.h"
#include "engine/base/saturating.h"
#include "engine/model/weights.h"
#include "lab/scenario/byte_size.h"
#include "lab/run/interrupt.h"
#include "profiling/measure/calibration.h"
#include "profiling/measure/default_roofs.h"
#include "profiling/trace.h"
#include "profiling/units.h"

namespace decodelab {

const char* describe(RepeatStop stop) {
  switch (stop) {
    case RepeatStop::TargetReached: return "target_ci reached";
    case RepeatStop::MaxRepeats: return "max_repeats reached";
    case RepeatStop::MaxSeconds: return "max_seconds reached";
    case RepeatStop::Interrupted: return "interrupted";
  }
  return "";
}

bool want_another_repeat(const RepeatPolicy& policy, int done, double elapsed_seconds, const Estimate& primary,
                         RepeatStop& stop) {
  if (done < policy.min_repeats) return true;
  if (!primary.noisy) {
    stop = RepeatStop::TargetReached;
    return false;
  }
  if (done >= policy.max_repeats) {
    stop = RepeatStop::MaxRepeats;
    return false;
  }
  if (elapsed_seconds >= policy.max_seconds) {
    stop = RepeatStop::MaxSeconds;
    return false;
  }
  return true;
}

void mark_if_contended(RunResult& result, const std::string& what, bool warn) {
  if (!result.contended()) return;
  mark_contended(result.metrics);
  if (!warn) return;
  std::string said;
  if (result.during && result.during->contended) said += "  - " + result.during->finding + "\n";
  if (result.after && result.after->contended)
    for (const std::string& finding : result.after->findings) said += "  - after the repeats: " + finding + "\n";
  if (said.empty() && result.machine && result.machine->contended) said = "  - (the machine check before timing, above)\n";
  std::fprintf(stderr, "decodelab: warning: %s were measured on a busy machine and are marked \"contended\": they "
               "need not be this machine's figures:\n%s", what.c_str(), said.c_str());
}

MachineState check_machine_for_timing(Backend& backend, int threads, bool warn, bool notes) {
  const std::optional<DeviceSpec> calibrated = calibrated_device_spec(backend, threads);
  RoofsMachine roofs;
  if (calibrated && calibrated->measured) {
    roofs.quiet_probe_bandwidth = calibrated->measured->noisy ? 0.0 : calibrated->measured->probe_bandwidth;
    roofs.core_round_trip_ns = calibrated->measured->core_round_trip_ns;
  }
  const auto stop_checkpoint = [] {
    if (stop_requested()) throw RepeatAbandoned(RepeatAbandoned::Why::StopRequested);
  };
  MachineState state = check_machine(backend, threads, roofs, MachineThresholds{}, stop_checkpoint);
  if (const std::string said = state.warning(notes); warn && !said.empty()) {
    std::fputs(said.c_str(), stderr);
    std::fflush(stderr);
  }
  return state;
}

void warn_if_roofs_suspect(const RunAnalysis& analysis, const std::string& what) {
  for (const AboveRoof& above : analysis.above_roof) {
    if (above.cache_resident) continue;
    std::fprintf(stderr, "decodelab: warning: %s: %s %s ran at %s of its roof: %s\n", what.c_str(),
                 phase_name(above.phase), op_category_name(above.category), format_percent(above.roof_fraction).c_str(),
                 above.explanation.c_str());
  }
}

void warn_if_unoptimised_build() {
  static std::atomic<bool> warned{false};
  bool optimised = true;
#ifndef __OPTIMIZE__
  optimised = false;
#endif
#ifdef DECODELAB_BUILD_TYPE
  if (std::strcmp(DECODELAB_BUILD_TYPE, "Debug") == 0) optimised = false;
#endif
  if (!optimised && !warned.exchange(true)) {
    std::fprintf(stderr,
                 "decodelab: warning: this binary was built without optimisation; "
                 "timings are not representative (build with the release preset)\n");
  }
}

BackendKind choose_backend(BackendChoice choice, std::optional<BackendKind> override_kind) {
  if (override_kind) {
    choice = *override_kind == BackendKind::Cuda ? BackendChoice::Cuda : BackendChoice::Cpu;
  }
  switch (choice) {
    case BackendChoice::Cpu: return BackendKind::Cpu;
    case BackendChoice::Auto:
      return cuda_backend_compiled() && cuda_device_available() ? BackendKind::Cuda : BackendKind::Cpu;
    case BackendChoice::Cuda:
      if (!cuda_backend_compiled()) {
        throw ResourceError(
            "backend cuda: this build of decodelab has no CUDA backend (configure with DECODELAB_CUDA=ON)");
      }
      if (!cuda_device_available())
        throw ResourceError("backend cuda: no CUDA device is usable on this machine: " + cuda_unavailable_reason());
      return BackendKind::Cuda;
  }
  return BackendKind::Cpu;
}

std::unique_ptr<Backend> open_backend(const Scenario& scenario, const RunOptions& options) {
  // A typo such as --threads 100000 would have OpenMP start that many threads.
  if (options.threads > kMaxCpuThreads) {
    throw InputError("--threads", 0, std::to_string(options.threads),
                     "expected at most " + std::to_string(kMaxCpuThreads) + " CPU threads (0 = every core)");
  }
  BackendOptions backend_options;
  backend_options.threads = kernel_threads(scenario, options);
  backend_options.cuda_graphs = scenario.cuda_graphs || options.cuda_graphs;
  backend_options.cpu_kernels = calibrated_cpu_kernels(backend_options.threads);  // the kernels the calibration measured
  return make_backend(choose_backend(scenario.backend, options.backend), backend_options);
}

int kernel_threads(const Scenario& scenario, const RunOptions& options) {
  return options.threads > 0 ? options.threads : scenario.threads;
}

int64_t bytes_needed(const MemoryPlan& plan, bool device_is_host) {
  return device_is_host ? saturating_add(plan.total(), plan.host_bytes) : plan.total();
}

MemoryPlan combined(const MemoryPlan& a, const MemoryPlan& b) {
  MemoryPlan sum;
  sum.weight_bytes = saturating_add(a.weight_bytes, b.weight_bytes);
  sum.extra_weight_bytes = saturating_add(a.extra_weight_bytes, b.extra_weight_bytes);
  sum.kv_cache_bytes = saturating_add(a.kv_cache_bytes, b.kv_cache_bytes);
  sum.workspace_bytes = saturating_add(a.workspace_bytes, b.workspace_bytes);
  sum.host_bytes = saturating_add(a.host_bytes, b.host_bytes);
  return sum;
}

bool same_weights(const Scenario& a, const Scenario& b) {
  const bool same_shapes = ModelShape::of(a.model_config) == ModelShape::of(b.model_config) &&
                           a.model_config.tie_word_embeddings == b.model_config.tie_word_embeddings;
  const bool checkpoint = a.model_source.kind == ModelSourceKind::Checkpoint;
  const bool same_source = a.model_source.kind == b.model_source.kind &&
                           (checkpoint ? a.model_source.path == b.model_source.path
                                       : a.workload.seed == b.workload.seed);
  return same_shapes && a.dtype == b.dtype && same_source;
}

MemoryPlan without_weights(MemoryPlan plan) {
  plan.weight_bytes = 0;
  return plan;
}

void check_memory_fits(const MemoryPlan& plan, int64_t available, std::optional<int64_t> cap, const std::string& what,
                       const std::string& device, bool device_is_host) {
  const bool capped = cap && *cap < available;
  const int64_t limit = capped ? *cap : available;
  const int64_t needed = bytes_needed(plan, device_is_host);
  if (needed <= limit) return;
  auto size = [](int64_t bytes) { return bytes == kSaturatedBytes ? std::string("more than 8 EiB") : format_bytes(bytes); };
  std::string parts = "weights " + size(plan.weight_bytes);
  if (plan.extra_weight_bytes) parts += ", extra weight copies " + size(plan.extra_weight_bytes);
  parts += ", KV cache " + size(plan.kv_cache_bytes) + ", workspace " + size(plan.workspace_bytes);
  if (device_is_host) parts += ", host copies " + size(plan.host_bytes);
  const std::string limit_text =
      capped ? "--max-memory allows " + format_bytes(limit) : device + " has " + format_bytes(limit) + " available";
  throw ResourceError(what + " needs " + size(needed) + " (" + parts + ") but " + limit_text);
}

std::string run_label(const Scenario& scenario) {
  return "scenario " + scenario.name + " (" + scenario.model_config.name + " " + dtype_name(scenario.dtype) + ")";
}

void check_memory_cap(const Scenario& scenario, const RunOptions& options) {
  if (!options.max_memory_bytes) return;
  const bool device_is_host = choose_backend(scenario.backend, options.backend) == BackendKind::Cpu;
  check_memory_fits(plan_memory(scenario.model_config, scenario.dtype, scenario.workload, scenario.bugs), INT64_MAX,
                    options.max_memory_bytes, run_label(scenario), "", device_is_host);
}

void check_scenario_fits(const Scenario& scenario, const Backend& backend, std::optional<int64_t> cap) {
  const MemoryPlan plan = plan_memory(scenario.model_config, scenario.dtype, scenario.workload, scenario.bugs);
  check_memory_fits(plan, static_cast<int64_t>(backend.available_memory()), cap, run_label(scenario),
                    "the " + backend.name() + " backend (" + backend.device_description() + ")",
                    backend.name() == "cpu");
}

LoadedScenario::LoadedScenario(Backend& backend, const Scenario& scenario, std::optional<int64_t> max_memory_bytes)
    : scenario_(scenario) {
  const ModelConfig& config = scenario.model_config;
  memory_ = plan_memory(config, scenario.dtype, scenario.workload, scenario.bugs);
  check_scenario_fits(scenario, backend, max_memory_bytes);
  ModelWeights weights = scenario.model_source.kind == ModelSourceKind::Checkpoint
                             ? load_hf_weights(backend, scenario.model_source.path, config, scenario.dtype)
                             : random_weights(backend, config, scenario.dtype, scenario.workload.seed);
  engine_ = std::make_unique<Engine>(backend, config, std::move(weights), scenario.bugs);
}

LoadedScenario::LoadedScenario(Backend& backend, const Scenario& scenario, std::optional<int64_t> max_memory_bytes,
                               const LoadedScenario& loaded)
    : scenario_(scenario) {
  if (!same_weights(scenario, loaded.scenario())) {
    throw std::invalid_argument(run_label(scenario) + " cannot share the weights of " + run_label(loaded.scenario()));
  }
  const ModelConfig& config = scenario.model_config;
  memory_ = plan_memory(config, scenario.dtype, scenario.workload, scenario.bugs);
  // The cap bounds what the run needs, its weights included; the device, what it still has
  // to give (the weights are already allocated).
  const bool device_is_host = backend.name() == "cpu";
  check_memory_fits(memory_, INT64_MAX, max_memory_bytes, run_label(scenario), "", device_is_host);
  check_memory_fits(without_weights(memory_), static_cast<int64_t>(backend.available_memory()), std::nullopt,
                    run_label(scenario) + " (sharing the weights already loaded)",
                    "the " + backend.name() + " backend (" + backend.device_description() + ")", device_is_host);
  engine_ = std::make_unique<Engine>(backend, config, loaded.engine_->weights(), scenario.bugs);
}

LoadedScenario::~LoadedScenario() = default;

GenerationResult LoadedScenario::generate(EventSink* sink) {
  GenerationResult result = engine_->generate(scenario_.workload, sink);
  if (result.non_finite_logits > 0) {
    throw NumericalError(run_label(scenario_) + ": " + std::to_string(result.non_finite_logits) + " of " +
                         std::to_string(result.last_logits.size()) +
                         " logits are NaN or Inf at the end of the run (rerun with --check-numerics to find the "
                         "first op that produced one)");
  }
  return result;
}

void LoadedScenario::check_numerics() {
  try {
    engine_->generate(scenario_.workload, nullptr, /*check_numerics=*/true);
  } catch (const NumericalError& error) {
    throw NumericalError(run_label(scenario_) + " (--check-numerics): " + error.what());
  }
}

RunResult summarize_run(const Scenario& scenario, const Backend& backend, const MemoryPlan& memory,
                        std::vector<GenerationResult> timed) {
  RunResult result;
  result.backend = backend.name();
  result.device = backend.device_description();
  result.memory = memory;
  for (const GenerationResult& generation : timed) result.repeats.push_back(generation.timing);
  result.metrics = summarize_repeats(result.repeats, scenario.model_config, scenario.dtype, scenario.workload,
                                     scenario.repeats.target_ci);
  if (!timed.empty()) {
    result.tokens = std::move(timed.back().tokens);
    result.last_logits = std::move(timed.back().last_logits);
  }
  return result;
}

namespace {

std::string progress_text(const Scenario& scenario, const char* phase, int index, int count) {
  return scenario.name + ": " + phase + " " + std::to_string(index) + "/" + std::to_string(count);
}

// "quickstart: repeat 3/6" for a fixed count, "quickstart: repeat 7 (6-30)" when adaptive.
std::string repeat_progress_text(const Scenario& scenario, int index) {
  const RepeatPolicy& policy = scenario.repeats;
  if (policy.min_repeats == policy.max_repeats) return progress_text(scenario, "repeat", index, policy.max_repeats);
  return scenario.name + ": repeat " + std::to_string(index) + " (" + std::to_string(policy.min_repeats) + "-" +
         std::to_string(policy.max_repeats) + ")";
}

// " done (0.412 s; ±2.1% so far)": the repeat's time and the primary figure's interval.
std::string repeat_done_text(const GenerationTiming& timing, const Estimate& primary) {
  char text[96];
  std::snprintf(text, sizeof text, " done (%.3f s; %s so far)", timing.total_ms / 1e3,
                format_interval(primary).c_str());
  return text;
}

}  // namespace

RunResult run_scenario(const Scenario& scenario, const RunOptions& options, Backend* open) {
  warn_if_unoptimised_build();
  check_memory_cap(scenario, options);
  std::unique_ptr<Backend> owned = open ? nullptr : open_backend(scenario, options);
  Backend* backend = open ? open : owned.get();
  LoadedScenario loaded(*backend, scenario, options.max_memory_bytes);
  std::optional<MachineState> machine;
  if (options.check_machine)
    machine = check_machine_for_timing(*backend, kernel_threads(scenario, options), /*warn=*/true,
                                       /*notes=*/options.progress != ProgressMode::Off);
  const Progress progress(options.progress);
  std::vector<GenerationResult> timed;
  std::string stopped_because;
  std::optional<MachineWatch> during;
  try {
    // Under a command that stops on request (sweep), a stop ends the run between generations:
    // its untimed repeats have no sink to abandon them part-way (one would slow them).
    for (int i = 0; i < scenario.warmup; ++i) {
      if (stop_requested()) throw RepeatAbandoned(RepeatAbandoned::Why::StopRequested);
      progress.status(progress_text(scenario, "warm-up", i + 1, scenario.warmup));
      loaded.generate(nullptr);
      progress.finished(progress_text(scenario, "warm-up", i + 1, scenario.warmup) + " done");
    }
    // Repeats until the decode wall time per step (the run's primary figure) is known to
    // ±target_ci, or the policy's count or time budget ends them. A progress line per repeat
    // says how sure that figure is so far, so a log shows why the repeats go on.
    const RepeatPolicy& policy = scenario.repeats;
    const int64_t timed_begin = now_ns();
    std::optional<MachineWatch> watch;
    if (machine || options.checked_machine) watch = start_machine_watch(machine ? *machine : *options.checked_machine);
    std::vector<GenerationTiming> timings;
    Estimate primary;
    RepeatStop stop = RepeatStop::MaxRepeats;
    for (int i = 0;; ++i) {
      if (i > 0 && !want_another_repeat(policy, i, (now_ns() - timed_begin) / 1e9, primary, stop)) break;
      if (stop_requested()) throw RepeatAbandoned(RepeatAbandoned::Why::StopRequested);
      const std::string label = repeat_progress_text(scenario, i + 1);
      progress.status(label);
      const CpuUsageSample window_begin = sample_cpu_usage();
      timed.push_back(loaded.generate(options.sink));
      if (watch) add_window(*watch, window_begin, sample_cpu_usage());
      timings.push_back(timed.back().timing);
      primary = summarize_repeats(timings, scenario.model_config, scenario.dtype, scenario.workload, policy.target_ci)
                    .primary();
      progress.finished(label + repeat_done_text(timed.back().timing, primary));
      if (timed.size() > 1) {  // only the last repeat's outputs are reported
        timed[timed.size() - 2].tokens.clear();
        timed[timed.size() - 2].last_logits.clear();
      }
    }
    stopped_because = describe(stop);
    during = watch;
  } catch (const NumericalError&) {
    progress.clear();
    if (options.check_numerics) loaded.check_numerics();  // names the op when it finds one
    throw;
  }
  if (options.check_numerics) {
    progress.status(scenario.name + ": checking numerics");
    loaded.check_numerics();
    progress.finished(scenario.name + ": numerics checked");
  }
  progress.clear();
  RunResult result = summarize_run(scenario, *backend, loaded.memory(), std::move(timed));
  result.stopped_because = stopped_because;
  result.machine = machine;
  result.during = during;
  mark_if_contended(result, scenario.name + "'s figures");
  return result;
}

}  // namespace decodelab
