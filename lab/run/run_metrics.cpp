// Per-repeat figures and their summary. A run with no decode steps (new_tokens: 1) has
// no decode phase; its decode figures are 0 rather than a division by zero.
#include "lab/run/run_metrics.h"

namespace decodelab {

const std::vector<RunFigure>& run_figures() {
  static const std::vector<RunFigure> figures = {
      {"ttft_ms", "TTFT ms", "ms", 2, &RunMetrics::ttft_ms, false},
      {"prefill_tokens_per_s", "prefill tok/s", "tokens/s", 1, &RunMetrics::prefill_tokens_per_s, false},
      {"decode_tokens_per_s", "decode tok/s", "tokens/s", 1, &RunMetrics::decode_tokens_per_s, true},
      {"decode_wall_ms_per_step", "wall ms/step", "ms", 3, &RunMetrics::decode_wall_ms_per_step, true},
      {"decode_busy_ms_per_step", "busy ms/step", "ms", 3, &RunMetrics::decode_busy_ms_per_step, true},
      {"decode_bandwidth_gbps", "GB/s", "GB/s", 2, &RunMetrics::decode_bandwidth_gbps, true},
      {"end_to_end_s", "end-to-end s", "s", 3, &RunMetrics::end_to_end_s, false},
  };
  return figures;
}

namespace {

double prompt_tokens(const Workload& workload) {
  return static_cast<double>(workload.requests) * static_cast<double>(workload.prompt_length());
}

}  // namespace

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
  metrics.end_to_end_s = timing.total_ms / 1e3;
  metrics.prefill_ms = timing.prefill_ms;
  if (timing.prefill_ms > 0) metrics.prefill_tokens_per_s = prompt_tokens(workload) / (timing.prefill_ms / 1e3);
  const double steps = static_cast<double>(timing.step_ms.size());
  if (steps > 0 && timing.decode_ms > 0) {
    metrics.decode_wall_ms_per_step = timing.decode_ms / steps;
    metrics.decode_busy_ms_per_step = timing.decode_busy_ms / steps;
    const double tokens_per_step = static_cast<double>(timing.decode_tokens) / steps;
    const double bytes_per_step = decode_bytes(timing, config, dtype, workload) / steps;
    metrics.decode_tokens_per_s = tokens_per_step / (metrics.decode_wall_ms_per_step / 1e3);
    metrics.decode_bandwidth_gbps = bytes_per_step / (metrics.decode_wall_ms_per_step / 1e3) / 1e9;
  }
  return metrics;
}

RunMetrics summarize_repeats(const std::vector<GenerationTiming>& repeats, const ModelConfig& config, DType dtype,
                             const Workload& workload, double target_ci) {
  RunMetrics metrics;
  metrics.repeats = static_cast<int>(repeats.size());
  std::vector<double> ttft, prefill, wall, busy, end_to_end;
  for (const GenerationTiming& timing : repeats) {
    const RepeatMetrics repeat = repeat_metrics(timing, config, dtype, workload);
    ttft.push_back(repeat.ttft_ms);
    prefill.push_back(repeat.prefill_ms);
    wall.push_back(repeat.decode_wall_ms_per_step);
    busy.push_back(repeat.decode_busy_ms_per_step);
    end_to_end.push_back(repeat.end_to_end_s);
  }
  metrics.ttft_ms = median_estimate(ttft, target_ci);
  metrics.end_to_end_s = median_estimate(end_to_end, target_ci);
  // Like the decode rates: the rate the prefill time's median implies, its interval mapped.
  metrics.prefill_tokens_per_s = reciprocal(median_estimate(prefill, target_ci), prompt_tokens(workload) * 1e3);
  if (!repeats.empty() && !repeats.front().step_ms.empty()) {
    const GenerationTiming& first = repeats.front();
    metrics.decode_steps = static_cast<int64_t>(first.step_ms.size());
    const double steps = static_cast<double>(metrics.decode_steps);
    metrics.decode_tokens_per_step = static_cast<double>(first.decode_tokens) / steps;
    metrics.decode_bytes_per_step = decode_bytes(first, config, dtype, workload) / steps;
    metrics.decode_wall_ms_per_step = median_estimate(wall, target_ci);
    metrics.decode_busy_ms_per_step = median_estimate(busy, target_ci);
    metrics.decode_tokens_per_s = reciprocal(metrics.decode_wall_ms_per_step, metrics.decode_tokens_per_step * 1e3);
    metrics.decode_bandwidth_gbps = reciprocal(metrics.decode_wall_ms_per_step, metrics.decode_bytes_per_step / 1e6);
  }
  return metrics;
}

void mark_contended(RunMetrics& metrics) {
  for (const RunFigure& figure : run_figures()) (metrics.*figure.estimate).contended = true;
}

}  // namespace decodelab
