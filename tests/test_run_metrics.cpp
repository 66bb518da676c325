// Run metrics from synthetic timings: medians and spread, decode tokens/s, and the
// achieved bandwidth worked out by hand from the lab-tiny shape.
#include <catch2/catch.hpp>

#include "lab/run_metrics.h"

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

TEST_CASE("stats: median of odd and even counts, min, max, spread", "[run_metrics]") {
  const MetricStats odd = stats_of({3.0, 1.0, 2.0});
  CHECK(odd.median == 2.0);
  CHECK(odd.min == 1.0);
  CHECK(odd.max == 3.0);
  CHECK(odd.spread() == 1.0);
  CHECK(stats_of({4.0, 1.0, 3.0, 2.0}).median == 2.5);
  CHECK(stats_of({7.0}).spread() == 0.0);
  const MetricStats empty = stats_of({});
  CHECK(empty.median == 0.0);
  CHECK(empty.spread() == 0.0);
}

TEST_CASE("one repeat: tokens/s over the decode phase, median step, bandwidth from the shape", "[run_metrics]") {
  const ModelConfig config = lab_tiny();
  const Workload workload = two_groups();
  const GenerationTiming timing = two_group_timing(20.0, 2.5);
  const RepeatMetrics metrics = repeat_metrics(timing, config, DType::F16, workload);

  CHECK(metrics.decode_tokens_per_s == Approx(16 / 0.020));
  CHECK(metrics.decode_ms_per_step == 2.5);
  CHECK(metrics.ttft_ms == 3.0);
  CHECK(metrics.total_s == Approx(0.040));
  // Prompt processing: 4 requests × 8 prompt tokens over the two groups' 6 ms of prefill.
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
  CHECK(metrics.achieved_bandwidth_gbps == Approx(bytes / 0.020 / 1e9));
}

TEST_CASE("no decode steps (new_tokens 1): rates are 0, not a division by zero", "[run_metrics]") {
  Workload workload = two_groups();
  workload.new_tokens = 1;
  GenerationTiming timing;
  timing.ttft_ms = 2;
  timing.total_ms = 3;
  const RepeatMetrics metrics = repeat_metrics(timing, lab_tiny(), DType::F32, workload);
  CHECK(metrics.decode_tokens_per_s == 0.0);
  CHECK(metrics.achieved_bandwidth_gbps == 0.0);
  CHECK(metrics.decode_ms_per_step == 0.0);
  CHECK(metrics.ttft_ms == 2.0);
  CHECK(metrics.prefill_tokens_per_s == 0.0);  // no prefill time recorded: no rate
}

TEST_CASE("summary over repeats: medians, and the spread shows the noisy repeat", "[run_metrics]") {
  const std::vector<GenerationTiming> repeats = {two_group_timing(20.0, 2.5), two_group_timing(40.0, 5.0),
                                                 two_group_timing(16.0, 2.0)};
  const RunMetrics metrics = summarize_repeats(repeats, lab_tiny(), DType::F32, two_groups());
  CHECK(metrics.decode_tokens_per_s.median == Approx(16 / 0.020));
  CHECK(metrics.decode_tokens_per_s.min == Approx(16 / 0.040));
  CHECK(metrics.decode_tokens_per_s.max == Approx(16 / 0.016));
  CHECK(metrics.decode_tokens_per_s.spread() == Approx((1000.0 - 400.0) / 800.0));
  CHECK(metrics.decode_ms_per_step.median == 2.5);
  CHECK(metrics.ttft_ms.spread() == 0.0);
  CHECK(metrics.prefill_tokens_per_s.median == Approx(32 / 0.006));
  CHECK(metrics.prefill_tokens_per_s.spread() == 0.0);
}
