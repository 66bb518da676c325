// End-to-end benchmarks through the engine (see end_to_end.h). Bytes per decode step are
// the run table's (lab/run/run_metrics.h: every streamed weight once, plus the KV cache at
// the mean context), so "GB/s" here is the same figure `decodelab run` prints.
#include "bench/end_to_end.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "bench/traced_run.h"
#include "bench/yardsticks.h"
#include "lab/run/run_metrics.h"
#include "lab/run/runner.h"

namespace decodelab::bench {

namespace {

struct DecodeSamples {
  std::vector<double> tokens_per_s, gbs, of_triad;
};

}  // namespace

void bench_decode(BenchReport& report, Backend& backend, const EndToEndOptions& options) {
  const DType dtypes[] = {DType::F16, DType::BF16, DType::F32};
  std::vector<std::unique_ptr<LoadedScenario>> loaded;
  for (DType dtype : dtypes) {
    loaded.push_back(std::make_unique<LoadedScenario>(
        backend, bench_scenario("lab-small-decode", {std::string("dtype=") + dtype_name(dtype)}), std::nullopt));
    loaded.back()->generate(nullptr);  // warm-up: first-touch of the KV cache and scratch
  }
  DecodeSamples samples[3];
  std::vector<double> bf16_over_fp16;
  for (int round = 0; round < options.rounds; ++round) {
    double round_tokens[3] = {};
    for (int turn = 0; turn < 3; ++turn) {
      const int which = (turn + round) % 3;  // rotate the order: no dtype always runs first
      const double triad_before = triad_gbs(options.threads);
      const GenerationTiming timing = loaded[which]->generate(nullptr).timing;
      const double triad_after = triad_gbs(options.threads);
      const Scenario& scenario = loaded[which]->scenario();
      const RepeatMetrics metrics = repeat_metrics(timing, scenario.model_config, scenario.dtype, scenario.workload);
      samples[which].tokens_per_s.push_back(metrics.decode_tokens_per_s);
      samples[which].gbs.push_back(metrics.decode_bandwidth_gbps);
      samples[which].of_triad.push_back(metrics.decode_bandwidth_gbps / ((triad_before + triad_after) / 2));
      round_tokens[which] = metrics.decode_tokens_per_s;
    }
    bf16_over_fp16.push_back(round_tokens[1] / round_tokens[0]);
  }

  std::vector<std::vector<std::string>> rows;
  nlohmann::json& json = report.section("decode") = nlohmann::json::object();
  json["workload"] = "lab-small, batch 1, prompt 128, 128 new tokens; " + std::to_string(options.rounds) + " rounds";
  for (int i = 0; i < 3; ++i) {
    const DecodeSamples& s = samples[i];
    const double tokens = median_of(s.tokens_per_s);
    const double of_triad = median_of(s.of_triad);
    rows.push_back({dtype_name(dtypes[i]), fixed(tokens), fixed(median_of(s.gbs)), percent(of_triad),
                    percent(*std::min_element(s.of_triad.begin(), s.of_triad.end())) + " - " +
                        percent(*std::max_element(s.of_triad.begin(), s.of_triad.end()))});
    json[dtype_name(dtypes[i])] = {{"decode_tokens_per_s", s.tokens_per_s},
                                   {"decode_bandwidth_gbps", s.gbs},
                                   {"of_triad", s.of_triad},
                                   {"median_decode_tokens_per_s", tokens},
                                   {"median_of_triad", of_triad}};
  }
  json["bf16_over_fp16"] = bf16_over_fp16;
  report.heading("decode, batch 1, lab-small (prompt 128, 128 new tokens)",
                 "Each generation runs between two STREAM triad passes; \"of triad\" is its GB/s over their mean, "
                 "the median over " + std::to_string(options.rounds) +
                     " rounds (range beside it). Against llama.cpp on the same weights: bench/llamacpp-compare.sh.");
  report.table({"dtype", "tok/s (median)", "GB/s (median)", "of triad", "range of triad"},
               rows);
  const std::string basis = "median over interleaved rounds, each run against the triad measured around it";
  report.check({"decode fp16, batch 1: GB/s of STREAM triad", 100.0 * median_of(samples[0].of_triad), 85, "%", basis});
  report.check({"decode bf16 / fp16 tok/s", median_of(bf16_over_fp16), 0.95, "x", "median of per-round ratios"});
  report.check({"decode fp32, batch 1: GB/s of STREAM triad", 100.0 * median_of(samples[2].of_triad), 85, "%", basis});
}

void bench_batched_decode(BenchReport& report, Backend& backend, const Yardsticks& yardsticks) {
  const double fma_peak = yardsticks.fma_peak;
  const DeviceSpec spec = yardsticks.spec();
  const int batches[] = {1, 2, 4, 8, 16, 32, 64};
  auto scenario_for = [](int batch) {
    const std::string size = std::to_string(batch);
    return bench_scenario("lab-small-decode", {"workload.requests=" + size, "workload.batch_size=" + size,
                                               "workload.prompt_tokens=16", "workload.new_tokens=16"});
  };
  auto tokens_per_s = [](LoadedScenario& loaded, const GenerationTiming& timing) {
    const Scenario& scenario = loaded.scenario();
    return repeat_metrics(timing, scenario.model_config, scenario.dtype, scenario.workload).decode_tokens_per_s;
  };
  // Batch 1 runs just before and after every batch's repeats: its mean is that row's
  // baseline, so a change in the machine's bandwidth between rows does not read as scaling.
  LoadedScenario single(backend, scenario_for(1), std::nullopt);
  single.generate(nullptr);
  // fp16 decode at batch b does about b FLOPs per weight byte (2 per 2-byte weight and
  // row); rows at half the ridge point or less are memory-bound by the roofline, where a
  // step should cost the same at any batch.
  const double ridge = yardsticks.stream.triad_gbs > 0 ? fma_peak / (yardsticks.stream.triad_gbs * 1e9) : 0;
  const double memory_bound_batch = std::max(2.0, ridge / 2);
  std::vector<std::vector<std::string>> rows;
  nlohmann::json json = nlohmann::json::array();
  double worst_small_batch_efficiency = 1e30, worst_large_batch_matmul = 1e30;
  for (int batch : batches) {
    LoadedScenario loaded(backend, scenario_for(batch), std::nullopt);
    loaded.generate(nullptr);
    const double baseline_before = tokens_per_s(single, single.generate(nullptr).timing);
    std::vector<double> tokens, matmul_gflops, ms_per_step;
    for (int repeat = 0; repeat < 3; ++repeat) {
      const TracedGeneration traced = traced_generate(loaded, backend, spec);
      const Scenario& scenario = loaded.scenario();
      const RepeatMetrics metrics =
          repeat_metrics(traced.timing, scenario.model_config, scenario.dtype, scenario.workload);
      tokens.push_back(metrics.decode_tokens_per_s);
      ms_per_step.push_back(metrics.decode_wall_ms_per_step);
      matmul_gflops.push_back(category_point(traced.analysis, Phase::Decode, OpCategory::Matmul).achieved_flops() / 1e9);
    }
    const double baseline = (baseline_before + tokens_per_s(single, single.generate(nullptr).timing)) / 2;
    const double tok = median_of(tokens), gflops = median_of(matmul_gflops);
    const double speedup = tok / baseline;
    const double efficiency = speedup / batch;
    const double of_peak = fma_peak > 0 ? gflops * 1e9 / fma_peak : 0;
    const bool memory_bound = batch <= memory_bound_batch;
    if (batch > 1 && memory_bound) worst_small_batch_efficiency = std::min(worst_small_batch_efficiency, efficiency);
    if (batch >= 32) worst_large_batch_matmul = std::min(worst_large_batch_matmul, of_peak);
    rows.push_back({std::to_string(batch), memory_bound ? "memory" : "", fixed(tok), fixed(median_of(ms_per_step), 2),
                    fixed(baseline), fixed(speedup, 2) + "x", percent(efficiency), fixed(gflops), percent(of_peak)});
    json.push_back({{"batch", batch},
                    {"decode_tokens_per_s", tok},
                    {"decode_wall_ms_per_step", median_of(ms_per_step)},
                    {"batch1_tokens_per_s_around", baseline},
                    {"speedup", speedup},
                    {"linear_efficiency", efficiency},
                    {"memory_bound_by_roofline", memory_bound},
                    {"decode_matmul_gflops", gflops},
                    {"decode_matmul_of_fma_peak", of_peak}});
  }
  report.heading("batched decode, lab-small fp16 (prompt 16, 16 new tokens, batch = requests)",
                 "\"speedup\" is over batch 1 run just before and after the row's repeats; \"linear\" is the "
                 "speedup divided by the batch: 100% while a step costs the same at any batch. \"memory\" marks "
                 "the rows at half the ridge point or less (ridge " + fixed(ridge) +
                     " FLOP/B = FMA peak / triad; fp16 decode does about `batch` FLOP/B). Matmul GFLOP/s from the "
                     "trace's decode-phase matmuls (median of 3).");
  report.table({"batch", "bound", "tok/s", "wall ms/step", "batch-1 tok/s around it", "speedup", "linear", "decode matmul GFLOP/s",
                "of FMA peak"},
               rows);
  report.check({"batched decode, memory-bound batches: speedup / batch", 100.0 * worst_small_batch_efficiency, 80, "%",
                "worst row at <= half the ridge point (batch 2 at least), against batch 1 run around it"});
  report.section("batched_decode") = {
      {"ridge_flop_per_byte", ridge}, {"memory_bound_up_to_batch", memory_bound_batch}, {"rows", json}};
  if (fma_peak > 0) {
    report.check({"batched decode, batch >= 32: decode matmuls of the FMA peak", 100.0 * worst_large_batch_matmul, 60,
                  "%", "worst of batch 32 and 64, from the trace"});
  }
}

void bench_prefill(BenchReport& report, Backend& backend, const Yardsticks& yardsticks) {
  const double fma_peak = yardsticks.fma_peak;
  const DeviceSpec spec = yardsticks.spec();
  LoadedScenario loaded(backend,
                        bench_scenario("lab-small-decode", {"workload.prompt_tokens=512", "workload.new_tokens=1"}),
                        std::nullopt);
  loaded.generate(nullptr);
  std::vector<double> ttft, matmul_gflops, all_gflops, matmul_share;
  for (int repeat = 0; repeat < 3; ++repeat) {
    const TracedGeneration traced = traced_generate(loaded, backend, spec);
    ttft.push_back(traced.timing.ttft_ms);
    const RooflinePoint matmuls = category_point(traced.analysis, Phase::Prefill, OpCategory::Matmul);
    matmul_gflops.push_back(matmuls.achieved_flops() / 1e9);
    if (const PhaseStats* prefill = traced.analysis.phase(Phase::Prefill)) {
      all_gflops.push_back(prefill->point.flops / prefill->timeline.device_seconds() / 1e9);
      matmul_share.push_back(matmuls.seconds / prefill->timeline.device_seconds());
    }
  }
  const double matmul = median_of(matmul_gflops), all = median_of(all_gflops);
  const double peak = fma_peak / 1e9;
  report.heading("prefill, lab-small fp16, 512-token prompt",
                 "Prefill FLOP/s: every prefill op's FLOPs over the prefill phase's device time (busy and idle); "
                 "matmuls: their FLOPs over their own time. Medians of 3.");
  report.table({"TTFT ms", "prefill GFLOP/s", "of FMA peak", "matmul GFLOP/s", "of FMA peak", "matmul share of prefill"},
               {{fixed(median_of(ttft)), fixed(all), peak > 0 ? percent(all / peak) : "n/a", fixed(matmul),
                 peak > 0 ? percent(matmul / peak) : "n/a", percent(median_of(matmul_share))}});
  report.section("prefill") = {{"ttft_ms", median_of(ttft)},
                               {"prefill_gflops", all},
                               {"matmul_gflops", matmul},
                               {"prefill_of_fma_peak", peak > 0 ? all / peak : 0.0},
                               {"matmul_of_fma_peak", peak > 0 ? matmul / peak : 0.0}};
  if (peak > 0)
    report.check({"prefill 512 tokens (all ops): of the FMA peak", 100.0 * all / peak, 50, "%",
                  "prefill FLOPs over prefill device time, median of 3"});
}

}  // namespace decodelab::bench
