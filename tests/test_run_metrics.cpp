// Run metrics from synthetic timings: medians with intervals, decode tokens/s from the
// wall time per step and the batch, and the bandwidth worked out by hand from the
// lab-tiny shape.
#include <catch2/catch.hpp>

#include "lab/run/run_metrics.h"

using namespace decodelab;

namespace {

// lab-tiny: vocab 512, hidden 128, intermediate 352, 2 layers, 4 heads, 2 KV heads (head_dim 32), untied.
ModelConfig lab_tiny() {
  ModelConfig config;
  config.name = "lab-tiny";
  config.vocab_size = 512;
  config.hidden_size = 128;
  config.intermediate_size = 352;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.max_position_embeddings = 1024;
  REQUIRE(config.finalize_and_validate().empty());
  return config;
}

// Two groups of two requests, prompt 8, 5 new tokens: 4 decode steps per group.
GenerationTiming two_group_timing(double decode_ms, double step_ms) {
  GenerationTiming timing;
  timing.total_ms = 40;
  timing.ttft_ms = 3;
  timing.prefill_ms = 6;
  timing.decode_ms = decode_ms;
  timing.decode_busy_ms = 0.75 * decode_ms;
  timing.step_ms.assign(8, step_ms);
  timing.decode_tokens = 4 * 4;
  timing.groups = 2;
  return timing;
}

Workload two_groups() {
  Workload workload;
  workload.requests = 4;
  workload.batch_size = 2;
  workload.prompt_tokens = 8;
  workload.new_tokens = 5;
  return workload;
}

}  // namespace

TEST_CASE("one repeat: wall and busy time per step, tokens/s from the wall time and the batch", "[run_metrics]") {
  const ModelConfig config = lab_tiny();
  const Workload workload = two_groups();
  // 20 ms of decode phase over 8 steps: 2.5 ms per step on the wall clock, whatever the
  // steps' own spread (here each step marker says 2.0 ms: the gaps between groups count).
  const GenerationTiming timing = two_group_timing(20.0, 2.0);
  const RepeatMetrics metrics = repeat_metrics(timing, config, DType::F16, workload);

  CHECK(metrics.decode_wall_ms_per_step == Approx(2.5));
  CHECK(metrics.decode_busy_ms_per_step == Approx(0.75 * 2.5));
  // Batch 2 per step: 2 tokens / 2.5 ms.
  CHECK(metrics.decode_tokens_per_s == Approx(2 / 0.0025));
  CHECK(metrics.decode_tokens_per_s == Approx(16 / 0.020));
  CHECK(metrics.ttft_ms == 3.0);
  CHECK(metrics.end_to_end_s == Approx(0.040));
  // Prompt processing: 4 requests × 8 prompt tokens over the two groups' 6 ms of prefill.
  CHECK(metrics.prefill_ms == 6.0);
  CHECK(metrics.prefill_tokens_per_s == Approx(32 / 0.006));

  // Per step every layer and the LM head (not the gathered embedding): 2 × (2 norms +
  // q 128×128 + k,v 2×128×64 + o 128×128 + 3×128×352) + final norm + lm_head 512×128.
  const double per_layer = 2 * 128 + 128 * 128 + 2 * 128 * 64 + 128 * 128 + 3 * 128 * 352;
  const double streamed_weights = 2 * per_layer + 128 + 512 * 128;
  const double weight_bytes = streamed_weights * 2;  // fp16
  // K and V of 2 layers × 2 KV heads × 32 dims at 2 bytes, at mean context 8 + 5/2.
  const double kv_bytes_per_token = 2.0 * 2 * 2 * 32 * 2 * (8 + 2.5);
  const double bytes = 8 * weight_bytes + 16 * kv_bytes_per_token;
  CHECK(decode_bytes(timing, config, DType::F16, workload) == Approx(bytes));
  CHECK(metrics.decode_bandwidth_gbps == Approx(bytes / 0.020 / 1e9));
}

TEST_CASE("no decode steps (new_tokens 1): rates are 0, not a division by zero", "[run_metrics]") {
  Workload workload = two_groups();
  workload.new_tokens = 1;
  GenerationTiming timing;
  timing.ttft_ms = 2;
  timing.total_ms = 3;
  const RepeatMetrics metrics = repeat_metrics(timing, lab_tiny(), DType::F32, workload);
  CHECK(metrics.decode_tokens_per_s == 0.0);
  CHECK(metrics.decode_bandwidth_gbps == 0.0);
  CHECK(metrics.decode_wall_ms_per_step == 0.0);
  CHECK(metrics.ttft_ms == 2.0);
  const RunMetrics summary = summarize_repeats({timing, timing}, lab_tiny(), DType::F32, workload, 0.03);
  CHECK(metrics.prefill_tokens_per_s == 0.0);  // no prefill time recorded: no rate
  CHECK(summary.decode_steps == 0);
  CHECK(summary.decode_tokens_per_s.samples == 0);
  CHECK(summary.primary().median == Approx(0.003));  // end-to-end stands in
}

TEST_CASE("summary over repeats: medians with intervals, rates derived from the median time", "[run_metrics]") {
  std::vector<GenerationTiming> repeats;
  for (double decode_ms : {20.0, 40.0, 16.0, 21.0, 19.0, 22.0, 20.5, 20.8, 19.5}) repeats.push_back(two_group_timing(decode_ms, 2.5));
  const RunMetrics metrics = summarize_repeats(repeats, lab_tiny(), DType::F32, two_groups(), 0.03);
  CHECK(metrics.repeats == 9);
  CHECK(metrics.decode_steps == 8);
  CHECK(metrics.decode_tokens_per_step == 2.0);
  CHECK(metrics.decode_wall_ms_per_step.median == Approx(20.5 / 8));
  CHECK(metrics.decode_wall_ms_per_step.samples == 9);
  // tok/s = batch / wall time per step, exactly, for the median and both ends.
  CHECK(metrics.decode_tokens_per_s.median == Approx(2.0 * 1e3 / metrics.decode_wall_ms_per_step.median));
  CHECK(metrics.decode_tokens_per_s.low == Approx(2.0 * 1e3 / metrics.decode_wall_ms_per_step.high));
  CHECK(metrics.decode_tokens_per_s.high == Approx(2.0 * 1e3 / metrics.decode_wall_ms_per_step.low));
  CHECK(metrics.decode_bandwidth_gbps.median ==
        Approx(metrics.decode_bytes_per_step / 1e6 / metrics.decode_wall_ms_per_step.median));
  // The one slow repeat (40 ms) sits outside the interval [x(2), x(8)] = [19, 22] ms; ±7% is
  // still noisy against a ±3% target.
  CHECK(metrics.decode_wall_ms_per_step.low == Approx(19.0 / 8));
  CHECK(metrics.decode_wall_ms_per_step.high == Approx(22.0 / 8));
  CHECK(metrics.decode_wall_ms_per_step.noisy);
  CHECK(metrics.ttft_ms.relative_ci() == 0.0);
  CHECK(&metrics.primary() == &metrics.decode_wall_ms_per_step);
}

TEST_CASE("summary over repeats: prefill tok/s is the rate of the prefill time's median, with its interval",
          "[run_metrics]") {
  std::vector<GenerationTiming> repeats;
  for (double prefill_ms : {6.0, 9.0, 5.0, 6.5, 5.5, 7.0, 6.2}) {
    repeats.push_back(two_group_timing(20.0, 2.5));
    repeats.back().prefill_ms = prefill_ms;
  }
  const RunMetrics metrics = summarize_repeats(repeats, lab_tiny(), DType::F32, two_groups(), 0.03);
  // 4 requests × 8 prompt tokens; sorted times 5, 5.5, 6, 6.2, 6.5, 7, 9: median 6.2 ms and,
  // for 7 samples, the interval [x(1), x(7)] = [5, 9] ms, flipped into the rate.
  CHECK(metrics.prefill_tokens_per_s.median == Approx(32 / 0.0062));
  CHECK(metrics.prefill_tokens_per_s.low == Approx(32 / 0.009));
  CHECK(metrics.prefill_tokens_per_s.high == Approx(32 / 0.005));
  CHECK(metrics.prefill_tokens_per_s.samples == 7);
  CHECK(metrics.prefill_tokens_per_s.noisy);  // ±40% against a ±3% target
}

TEST_CASE("the figures printers iterate over: one name and label each", "[run_metrics]") {
  std::vector<std::string> keys;
  for (const RunFigure& figure : run_figures()) keys.push_back(figure.key);
  CHECK(keys == std::vector<std::string>{"ttft_ms", "prefill_tokens_per_s", "decode_tokens_per_s", "decode_wall_ms_per_step",
                                         "decode_busy_ms_per_step", "decode_bandwidth_gbps", "end_to_end_s"});
}
