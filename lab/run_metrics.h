// The numbers a run reports, computed from each timed repeat's GenerationTiming: each
// metric per repeat, then its median, min and max over repeats. Medians, not means,
// because one preempted repeat on a shared machine should not move the headline.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/dtype.h"
#include "engine/generator.h"
#include "engine/model_config.h"

namespace decodelab {

struct MetricStats {
  double median = 0;
  double min = 0;
  double max = 0;
  // (max - min) / median: 0.05 reads "± 5 %" in the table.
  double spread() const { return median > 0 ? (max - min) / median : 0.0; }
};
MetricStats stats_of(std::vector<double> values);

// One repeat's metrics.
struct RepeatMetrics {
  double decode_tokens_per_s = 0;  // every request's decode tokens / decode phase time
  // Prompt processing: every request's prompt tokens / prefill time (each group's start to
  // its first token on the device clock, summed over groups), llama-bench's "pp" figure.
  double prefill_tokens_per_s = 0;
  double decode_ms_per_step = 0;   // median decode step
  double ttft_ms = 0;
  double total_s = 0;
  double achieved_bandwidth_gbps = 0;  // decode bytes (model below) / decode phase time
};

struct RunMetrics {
  MetricStats decode_tokens_per_s;
  MetricStats decode_ms_per_step;
  MetricStats ttft_ms;
  MetricStats total_s;
  MetricStats achieved_bandwidth_gbps;
  MetricStats prefill_tokens_per_s;
};

// Bytes the decode phase must stream from memory: per step, every parameter a step
// touches (config.streamed_parameters_per_step() × dtype size), plus per decoded token
// the K and V it attends to at the mean decode context (prompt + new_tokens / 2). These
// are the bytes the fixed path needs; a buggy run moving more reads as lower GB/s.
double decode_bytes(const GenerationTiming& timing, const ModelConfig& config, DType dtype, const Workload& workload);

RepeatMetrics repeat_metrics(const GenerationTiming& timing, const ModelConfig& config, DType dtype,
                             const Workload& workload);
RunMetrics summarize_repeats(const std::vector<GenerationTiming>& repeats, const ModelConfig& config, DType dtype,
                             const Workload& workload);

}  // namespace decodelab
