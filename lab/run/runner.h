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
#include "engine/model/generator.h"
#include "lab/cli/progress.h"
#include "lab/run/run_metrics.h"
#include "lab/scenario/scenario.h"
#include "profiling/model/analysis.h"
#include "profiling/measure/machine_check.h"
#include "profiling/trace.h"

namespace decodelab {

struct RunOptions {
  std::optional<BackendKind> backend;       // overrides the scenario's `backend:`
  int threads = 0;                          // CPU kernel threads; 0 = every core
  std::optional<int64_t> max_memory_bytes;  // --max-memory: refuse plans above this
  EventSink* sink = nullptr;                // sees the timed repeats (not the warm-ups)
  ProgressMode progress = ProgressMode::Off;  // stderr: a status line, or a line per repeat
  // Check the machine once the scenario is loaded, before any timing (warns on stderr when
  // contended; RunResult::machine holds what it saw).
  bool check_machine = false;
  // Without check_machine: the check a command already took (a sweep's first point), which
  // the repeats are then watched against (RunResult::during).
  const MachineState* checked_machine = nullptr;
  bool cuda_graphs = false;                 // --cuda-graphs: as the scenario's run.cuda_graphs
  // After the repeats (or as soon as NaN/Inf shows in the logits), one more generation
  // with every op's output checked, to name the first op that produced a non-finite value.
  bool check_numerics = false;
};

struct RunResult {
  std::string backend;  // "cpu" | "cuda"
  std::string device;   // the backend's device description
  MemoryPlan memory;
  std::vector<GenerationTiming> repeats;     // one per timed repeat, in order
  RunMetrics metrics;                        // medians with their intervals over the repeats
  std::string stopped_because;               // why the repeats ended (see RepeatStop)
  std::optional<MachineState> machine;       // the machine check taken before timing, when one was
  std::optional<MachineWatch> during;        // the machine while the repeats ran (every timed repeat a window)
  std::optional<MachineState> after;         // the machine check again after the repeats, when one was before
  // Whether any of the three saw contention: every figure is then marked contended.
  bool contended() const {
    return (machine && machine->contended) || (during && during->contended) || (after && after->contended);
  }
  std::vector<std::vector<int32_t>> tokens;  // [requests][new_tokens], from the last repeat
  std::vector<float> last_logits;            // [requests * vocab], from the last repeat
};

// Why a run's (or a comparison's) timed repeats ended.
enum class RepeatStop { TargetReached, MaxRepeats, MaxSeconds, Interrupted };
// "target_ci reached", "max_repeats reached", "max_seconds reached", "interrupted".
const char* describe(RepeatStop stop);
// Another repeat? Not before min_repeats are done; then none once the primary figure's
// interval is within the target (not noisy), max_repeats are done, or `elapsed_seconds`
// of timed work reached max_seconds. `stop` says which ended the loop.
bool want_another_repeat(const RepeatPolicy& policy, int done, double elapsed_seconds, const Estimate& primary,
                         RepeatStop& stop);

// auto = cuda when compiled in and a device exists, else cpu. An explicit cuda without
// one is a ResourceError (exit code 2), raised before any work.
BackendKind choose_backend(BackendChoice choice, std::optional<BackendKind> override_kind);
std::unique_ptr<Backend> open_backend(const Scenario& scenario, const RunOptions& options);
// The CPU kernel threads a run uses: --threads when given (options.threads > 0), else the
// scenario's `threads:`; 0 = every core.
int kernel_threads(const Scenario& scenario, const RunOptions& options);

// The bytes a plan takes from a device's memory: its device parts, plus its host copies
// when the device's memory is the host's (the CPU backend).
int64_t bytes_needed(const MemoryPlan& plan, bool device_is_host);
// Two plans held at once (compare keeps a fixed twin and a buggy scenario loaded).
MemoryPlan combined(const MemoryPlan& a, const MemoryPlan& b);

// Throws ResourceError, with the plan's parts and the limit, when bytes_needed() exceeds
// what the device has (`available`) or the user's cap.
void check_memory_fits(const MemoryPlan& plan, int64_t available, std::optional<int64_t> cap, const std::string& what,
                       const std::string& device, bool device_is_host = false);
// The user's cap needs no device: refuses a plan above --max-memory before one is started.
void check_memory_cap(const Scenario& scenario, const RunOptions& options);
// The scenario's plan against `backend` and the cap, before anything is allocated.
void check_scenario_fits(const Scenario& scenario, const Backend& backend, std::optional<int64_t> cap);
// "scenario quickstart (lab-tiny fp32)", for messages.
std::string run_label(const Scenario& scenario);

// Whether two scenarios load the same weights: the same model shapes, dtype and source
// (the seed of random weights, or the checkpoint). A scenario and its fixed twin always do.
bool same_weights(const Scenario& a, const Scenario& b);
// A plan that shares its weights with a model already loaded: the same plan less the
// weights (its own extra copies, cache and workspace stay).
MemoryPlan without_weights(MemoryPlan plan);

// A scenario loaded on a backend: its weights and its engine, ready to generate.
class LoadedScenario {
 public:
  LoadedScenario(Backend& backend, const Scenario& scenario, std::optional<int64_t> max_memory_bytes);
  // Shares the weights `loaded` holds (same_weights() of the two scenarios must hold, else
  // std::invalid_argument) instead of loading a copy: only the rest of the plan is
  // allocated, and checked against the memory left. compare loads a fixed twin so, which
  // halves its setup and lets both sides read the very same weight pages.
  LoadedScenario(Backend& backend, const Scenario& scenario, std::optional<int64_t> max_memory_bytes,
                 const LoadedScenario& loaded);
  ~LoadedScenario();
  LoadedScenario(const LoadedScenario&) = delete;
  LoadedScenario& operator=(const LoadedScenario&) = delete;

  // Throws NumericalError when the logits come back holding NaN or Inf.
  GenerationResult generate(EventSink* sink);
  // One generation with every op's output checked (--check-numerics): throws
  // NumericalError naming the first op whose output holds NaN or Inf; returns when none does.
  void check_numerics();
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
// With options.check_machine (or checked_machine) the machine is checked before the repeats and
// watched during them; contention marks every figure and is said on stderr. `run` also checks
// again after them (RunResult::after).
RunResult run_scenario(const Scenario& scenario, const RunOptions& options, Backend* backend = nullptr);

// The machine check before timing (profiling/measure/machine_check.h), against the quiet bandwidth
// probe and core round trip this machine's calibration recorded when there is one; a
// contended machine is said on stderr (with the numbers and what to do) when `warn`, its
// notes (far-apart cores) when `notes` too — a quiet command prints only warnings. Under a
// command that stops on request (lab, sweep) a stop abandons the check within a fraction of a
// second (RepeatAbandoned, StopRequested), as it abandons the roofs' measurement after it.
MachineState check_machine_for_timing(Backend& backend, int threads, bool warn = true, bool notes = true);
// After the repeats: marks the figures contended when the check before, the watch or the
// check after saw contention, and says on stderr what the watch or the check after saw
// (the check before said its own) — `what` names the figures ("host_sync's figures").
void mark_if_contended(RunResult& result, const std::string& what, bool warn = true);

// Points that ran above their roof with a working set larger than the cache (the roofs read
// low: RunAnalysis::roofs_suspect), said on stderr, one line each, naming `what` ran them.
// Reported, never a trigger to measure again: the calibration is replaced only by
// `decodelab calibrate`, on a machine its user knows to be quiet.
void warn_if_roofs_suspect(const RunAnalysis& analysis, const std::string& what);

// Once per process: a warning on stderr when this binary was built without optimisation.
void warn_if_unoptimised_build();

}  // namespace decodelab
