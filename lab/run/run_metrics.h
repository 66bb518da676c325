// The figures a run reports (docs/metrics.md), computed here once for every surface: the
// CLI row, --json, sweep and lab rows, the HTML report's headline, compare and the bench.
// Each timed repeat gives one sample of each measured time; a run's figure is the median
// of its samples with a 95% interval (profiling/model/statistics.h).
//
// Non-obvious choice: the rates are derived from the measured times, never medians of
// their own. decode tok/s = tokens per step / decode wall time per step, and GB/s = bytes
// per step / the same time, so a row's tok/s, ms/step and batch always agree — the wall
// time per step is the decode phase's device wall time (first token to last step marker,
// gaps included) over its steps, the clock tok/s is counted on; the device-busy time per
// step is shown beside it under its own name.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/base/dtype.h"
#include "engine/model/generator.h"
#include "engine/model/model_config.h"
#include "profiling/model/statistics.h"

namespace decodelab {

// One repeat's figures.
struct RepeatMetrics {
  double ttft_ms = 0;
  // Prompt processing, llama-bench's "pp": every request's prompt tokens / the prefill time
  // (each group's start to its first token on the device clock, summed over groups).
  double prefill_ms = 0;
  double prefill_tokens_per_s = 0;
  double decode_wall_ms_per_step = 0;  // decode phase wall time / decode steps
  double decode_busy_ms_per_step = 0;  // device busy in the decode phase / decode steps
  double end_to_end_s = 0;             // host wall time of the whole generation
  double decode_tokens_per_s = 0;      // decode tokens per step / wall time per step
  double decode_bandwidth_gbps = 0;    // decode bytes per step / wall time per step
};

struct RunMetrics {
  Estimate ttft_ms;
  Estimate prefill_tokens_per_s;   // from the prefill time's median
  Estimate decode_wall_ms_per_step;
  Estimate decode_busy_ms_per_step;
  Estimate end_to_end_s;
  Estimate decode_tokens_per_s;    // from decode_wall_ms_per_step
  Estimate decode_bandwidth_gbps;  // from decode_wall_ms_per_step
  // Exact, the same in every repeat (the workload decides them).
  int64_t decode_steps = 0;
  double decode_tokens_per_step = 0;  // the batch each step decodes (mean over groups)
  double decode_bytes_per_step = 0;   // the bytes the fixed path needs per step (decode_bytes / steps)
  int repeats = 0;

  // The figure the noise target judges a run by: the decode wall time per step, or the
  // end-to-end time when there is no decode phase.
  const Estimate& primary() const { return decode_steps > 0 ? decode_wall_ms_per_step : end_to_end_s; }
};

// The run's figures in print order, each under its one name: `key` in JSON and
// docs/metrics.md, `label` in tables and reports. Every printer iterates over this list.
struct RunFigure {
  const char* key;       // "decode_tokens_per_s"
  const char* label;     // "decode tok/s"
  const char* unit;      // "tokens/s"
  int decimals;          // in tables
  Estimate RunMetrics::*estimate;
  bool decode;           // absent (printed "-") when the run has no decode step
};
const std::vector<RunFigure>& run_figures();
// Marks every figure as measured under contention (Estimate::contended).
void mark_contended(RunMetrics& metrics);

// Bytes the decode phase must stream from memory: per step, every parameter a step
// touches (config.streamed_parameters_per_step() × dtype size), plus per decoded token
// the K and V it attends to at the mean decode context (prompt + new_tokens / 2). These
// are the bytes the fixed path needs; a buggy run moving more reads as lower GB/s.
double decode_bytes(const GenerationTiming& timing, const ModelConfig& config, DType dtype, const Workload& workload);

RepeatMetrics repeat_metrics(const GenerationTiming& timing, const ModelConfig& config, DType dtype,
                             const Workload& workload);
// target_ci: the noise target each figure's interval is held to (run.target_ci).
RunMetrics summarize_repeats(const std::vector<GenerationTiming>& repeats, const ModelConfig& config, DType dtype,
                             const Workload& workload, double target_ci);

}  // namespace decodelab
