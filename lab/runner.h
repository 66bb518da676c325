// Runs a scenario: backend -> memory check (before anything is allocated) -> weights ->
// Engine -> `warmup` untimed generations -> `repeats` timed ones -> RunResult.
// The pieces are public so that `compare` can load a fixed twin and a buggy scenario on
// one backend and alternate their repeats, then summarise each with summarize_run().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/generator.h"
#include "lab/run_metrics.h"
#include "lab/scenario.h"

namespace decodelab {

struct RunOptions {
  std::optional<BackendKind> backend;       // overrides the scenario's `backend:`
  int threads = 0;                          // CPU kernel threads; 0 = every core
  std::optional<int64_t> max_memory_bytes;  // --max-memory: refuse plans above this
  EventSink* sink = nullptr;                // sees the timed repeats (not the warm-ups)
  bool show_progress = false;               // a progress line on stderr (caller checks isatty)
  bool cuda_graphs = false;                 // --cuda-graphs: as the scenario's run.cuda_graphs
};

struct RunResult {
  std::string backend;  // "cpu" | "cuda"
  std::string device;   // the backend's device description
  MemoryPlan memory;
  std::vector<GenerationTiming> repeats;     // one per timed repeat, in order
  RunMetrics metrics;                        // medians (and spread) over the repeats
  std::vector<std::vector<int32_t>> tokens;  // [requests][new_tokens], from the last repeat
  std::vector<float> last_logits;            // [requests * vocab], from the last repeat
};

// auto = cuda when compiled in and a device exists, else cpu. An explicit cuda without
// one is a ResourceError (exit code 2), raised before any work.
BackendKind choose_backend(BackendChoice choice, std::optional<BackendKind> override_kind);
std::unique_ptr<Backend> open_backend(const Scenario& scenario, const RunOptions& options);

// Throws ResourceError, with the plan's parts and the limit, when plan.total() exceeds
// what the device has (`available`) or the user's cap.
void check_memory_fits(const MemoryPlan& plan, int64_t available, std::optional<int64_t> cap, const std::string& what,
                       const std::string& device);

// A scenario loaded on a backend: its weights and its engine, ready to generate.
class LoadedScenario {
 public:
  LoadedScenario(Backend& backend, const Scenario& scenario, std::optional<int64_t> max_memory_bytes);
  ~LoadedScenario();
  LoadedScenario(const LoadedScenario&) = delete;
  LoadedScenario& operator=(const LoadedScenario&) = delete;

  GenerationResult generate(EventSink* sink);
  const Scenario& scenario() const { return scenario_; }
  const MemoryPlan& memory() const { return memory_; }

 private:
  Scenario scenario_;
  MemoryPlan memory_;
  std::unique_ptr<Engine> engine_;
};

// Timed generations -> RunResult (tokens and logits from the last one).
RunResult summarize_run(const Scenario& scenario, const Backend& backend, const MemoryPlan& memory,
                        std::vector<GenerationResult> timed);

// On `backend` when given (already opened with open_backend), else on a backend of its own.
RunResult run_scenario(const Scenario& scenario, const RunOptions& options, Backend* backend = nullptr);

// Once per process: a warning on stderr when this binary was built without optimisation.
void warn_if_unoptimised_build();

}  // namespace decodelab
