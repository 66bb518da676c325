// Per-repeat metrics and their summary. A run with no decode steps (new_tokens: 1) has
// no decode phase; its rates are reported as 0 rather than a division by zero.
#include "lab/run_metrics.h"

#include <algorithm>

namespace decodelab {

MetricStats stats_of(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  const double median = values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
  return {median, values.front(), values.back()};
}

double decode_bytes(const GenerationTiming& timing, const ModelConfig& config, DType dtype, const Workload& workload) {
  const double weight_bytes_per_step =
      static_cast<double>(config.streamed_parameters_per_step()) * static_cast<double>(dtype_size(dtype));
  const double mean_context = workload.prompt_length() + workload.new_tokens / 2.0;
  const double kv_bytes_per_token = static_cast<double>(config.kv_bytes_per_position(dtype)) * mean_context;
  return weight_bytes_per_step * static_cast<double>(timing.step_ms.size()) +
         kv_bytes_per_token * static_cast<double>(timing.decode_tokens);
}

RepeatMetrics repeat_metrics(const GenerationTiming& timing, const ModelConfig& config, DType dtype,
                             const Workload& workload) {
  RepeatMetrics metrics;
  metrics.ttft_ms = timing.ttft_ms;
  metrics.total_s = timing.total_ms / 1e3;
  metrics.decode_ms_per_step = stats_of(timing.step_ms).median;
  if (timing.prefill_ms > 0) {
    const double prompt_tokens = static_cast<double>(workload.requests) * static_cast<double>(workload.prompt_length());
    metrics.prefill_tokens_per_s = prompt_tokens / (timing.prefill_ms / 1e3);
  }
  if (timing.decode_ms > 0) {
    const double decode_s = timing.decode_ms / 1e3;
    metrics.decode_tokens_per_s = static_cast<double>(timing.decode_tokens) / decode_s;
    metrics.achieved_bandwidth_gbps = decode_bytes(timing, config, dtype, workload) / decode_s / 1e9;
  }
  return metrics;
}

RunMetrics summarize_repeats(const std::vector<GenerationTiming>& repeats, const ModelConfig& config, DType dtype,
                             const Workload& workload) {
  std::vector<double> tokens_per_s, ms_per_step, ttft_ms, total_s, bandwidth, prefill_tokens_per_s;
  for (const GenerationTiming& timing : repeats) {
    const RepeatMetrics metrics = repeat_metrics(timing, config, dtype, workload);
    tokens_per_s.push_back(metrics.decode_tokens_per_s);
    ms_per_step.push_back(metrics.decode_ms_per_step);
    ttft_ms.push_back(metrics.ttft_ms);
    total_s.push_back(metrics.total_s);
    bandwidth.push_back(metrics.achieved_bandwidth_gbps);
    prefill_tokens_per_s.push_back(metrics.prefill_tokens_per_s);
  }
  return {stats_of(tokens_per_s), stats_of(ms_per_step),     stats_of(ttft_ms),
          stats_of(total_s),      stats_of(bandwidth), stats_of(prefill_tokens_per_s)};
}

}  // namespace decodelab
