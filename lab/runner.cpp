// The runner. Warm-ups are untimed and unobserved (no sink), so a trace holds only the
// steady state; weights come from the workload's seed, so the fixed twin of a scenario
// gets the same parameters and therefore the same tokens.
#include "lab/runner.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "engine/errors.h"
#include "engine/hf_checkpoint.h"
#include "engine/weights.h"
#include "lab/byte_size.h"

namespace decodelab {

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
      if (!cuda_device_available()) throw ResourceError("backend cuda: no CUDA device is available on this machine");
      return BackendKind::Cuda;
  }
  return BackendKind::Cpu;
}

std::unique_ptr<Backend> open_backend(const Scenario& scenario, const RunOptions& options) {
  BackendOptions backend_options;
  backend_options.threads = options.threads;
  backend_options.cuda_graphs = scenario.cuda_graphs || options.cuda_graphs;
  return make_backend(choose_backend(scenario.backend, options.backend), backend_options);
}

void check_memory_fits(const MemoryPlan& plan, int64_t available, std::optional<int64_t> cap, const std::string& what,
                       const std::string& device) {
  const bool capped = cap && *cap < available;
  const int64_t limit = capped ? *cap : available;
  if (plan.total() <= limit) return;
  std::string parts = "weights " + format_bytes(plan.weight_bytes);
  if (plan.extra_weight_bytes) parts += ", extra weight copies " + format_bytes(plan.extra_weight_bytes);
  parts += ", KV cache " + format_bytes(plan.kv_cache_bytes) + ", workspace " + format_bytes(plan.workspace_bytes);
  const std::string limit_text =
      capped ? "--max-memory allows " + format_bytes(limit) : device + " has " + format_bytes(limit) + " available";
  throw ResourceError(what + " needs " + format_bytes(plan.total()) + " (" + parts + ") but " + limit_text);
}

namespace {

// "scenario quickstart (lab-tiny fp32)", for messages.
std::string run_label(const Scenario& scenario) {
  return "scenario " + scenario.name + " (" + scenario.model_config.name + " " + dtype_name(scenario.dtype) + ")";
}

}  // namespace

LoadedScenario::LoadedScenario(Backend& backend, const Scenario& scenario, std::optional<int64_t> max_memory_bytes)
    : scenario_(scenario) {
  const ModelConfig& config = scenario.model_config;
  memory_ = plan_memory(config, scenario.dtype, scenario.workload, scenario.bugs);
  check_memory_fits(memory_, static_cast<int64_t>(backend.available_memory()), max_memory_bytes, run_label(scenario),
                    "the " + backend.name() + " backend (" + backend.device_description() + ")");
  ModelWeights weights = scenario.model_source.kind == ModelSourceKind::Checkpoint
                             ? load_hf_weights(backend, scenario.model_source.path, config, scenario.dtype)
                             : random_weights(backend, config, scenario.dtype, scenario.workload.seed);
  engine_ = std::make_unique<Engine>(backend, config, std::move(weights), scenario.bugs);
}

LoadedScenario::~LoadedScenario() = default;

GenerationResult LoadedScenario::generate(EventSink* sink) { return engine_->generate(scenario_.workload, sink); }

RunResult summarize_run(const Scenario& scenario, const Backend& backend, const MemoryPlan& memory,
                        std::vector<GenerationResult> timed) {
  RunResult result;
  result.backend = backend.name();
  result.device = backend.device_description();
  result.memory = memory;
  for (const GenerationResult& generation : timed) result.repeats.push_back(generation.timing);
  result.metrics = summarize_repeats(result.repeats, scenario.model_config, scenario.dtype, scenario.workload);
  if (!timed.empty()) {
    result.tokens = std::move(timed.back().tokens);
    result.last_logits = std::move(timed.back().last_logits);
  }
  return result;
}

namespace {

void show_progress(bool enabled, const Scenario& scenario, const char* phase, int index, int count) {
  if (!enabled) return;
  std::fprintf(stderr, "\r\033[K%s: %s %d/%d", scenario.name.c_str(), phase, index, count);
  std::fflush(stderr);
}

}  // namespace

RunResult run_scenario(const Scenario& scenario, const RunOptions& options, Backend* open) {
  warn_if_unoptimised_build();
  // The user's cap needs no device: refuse before starting one.
  if (options.max_memory_bytes) {
    check_memory_fits(plan_memory(scenario.model_config, scenario.dtype, scenario.workload, scenario.bugs), INT64_MAX,
                      options.max_memory_bytes, run_label(scenario), "");
  }
  std::unique_ptr<Backend> owned = open ? nullptr : open_backend(scenario, options);
  Backend* backend = open ? open : owned.get();
  LoadedScenario loaded(*backend, scenario, options.max_memory_bytes);
  for (int i = 0; i < scenario.warmup; ++i) {
    show_progress(options.show_progress, scenario, "warm-up", i + 1, scenario.warmup);
    loaded.generate(nullptr);
  }
  std::vector<GenerationResult> timed;
  for (int i = 0; i < scenario.repeats; ++i) {
    show_progress(options.show_progress, scenario, "repeat", i + 1, scenario.repeats);
    timed.push_back(loaded.generate(options.sink));
    if (timed.size() > 1) {  // only the last repeat's outputs are reported
      timed[timed.size() - 2].tokens.clear();
      timed[timed.size() - 2].last_logits.clear();
    }
  }
  if (options.show_progress) std::fprintf(stderr, "\r\033[K");
  return summarize_run(scenario, *backend, loaded.memory(), std::move(timed));
}

}  // namespace decodelab
