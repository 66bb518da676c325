// The runner: the memory check (before anything is allocated), backend choice, and a
// tiny end-to-end run on the CPU backend whose result has the promised structure.
#include <catch2/catch.hpp>

#include "engine/base/errors.h"
#include "lab/scenario/byte_size.h"
#include "lab/run/runner.h"
#include "support/temp_dir.h"

using namespace decodelab;
using Catch::Matchers::Contains;
using decodelab::testing::TempDir;

namespace {

Scenario tiny_scenario(const TempDir& dir, const std::vector<std::string>& overrides = {}) {
  return load_scenario(dir.write("tiny.yaml",
                                 "model: lab-tiny\ndtype: fp32\nbackend: cpu\n"
                                 "workload: {requests: 3, batch_size: 2, prompt_tokens: 6, new_tokens: 5, seed: 11}\n"
                                 "run: {warmup: 1, repeats: 2}\n"),
                       overrides);
}

}  // namespace

TEST_CASE("memory check: a plan that fits passes, one that does not names the numbers", "[runner]") {
  MemoryPlan plan;
  plan.weight_bytes = 600 << 20;
  plan.kv_cache_bytes = 300 << 20;
  plan.workspace_bytes = 100 << 20;
  CHECK_NOTHROW(check_memory_fits(plan, 2LL << 30, std::nullopt, "run", "the cpu backend"));
  CHECK_NOTHROW(check_memory_fits(plan, 2LL << 30, 1LL << 30, "run", "the cpu backend"));
  CHECK_THROWS_WITH(check_memory_fits(plan, 512 << 20, std::nullopt, "run x", "the cpu backend"),
                    Contains("run x needs 1000.00 MiB") && Contains("weights 600.00 MiB") &&
                        Contains("KV cache 300.00 MiB") && Contains("the cpu backend has 512.00 MiB available"));
  CHECK_THROWS_WITH(check_memory_fits(plan, 2LL << 30, 256 << 20, "run x", "the cpu backend"),
                    Contains("--max-memory allows 256.00 MiB"));
  CHECK_THROWS_AS(check_memory_fits(plan, 2LL << 30, 256 << 20, "run x", "the cpu backend"), ResourceError);
}

TEST_CASE("backend choice: explicit cpu, overrides, and cuda only where it exists", "[runner]") {
  CHECK(choose_backend(BackendChoice::Cpu, std::nullopt) == BackendKind::Cpu);
  CHECK(choose_backend(BackendChoice::Cuda, BackendKind::Cpu) == BackendKind::Cpu);
  const bool cuda = cuda_backend_compiled() && cuda_device_available();
  CHECK(choose_backend(BackendChoice::Auto, std::nullopt) == (cuda ? BackendKind::Cuda : BackendKind::Cpu));
  if (!cuda) {
    CHECK_THROWS_AS(choose_backend(BackendChoice::Cuda, std::nullopt), ResourceError);
    CHECK_THROWS_AS(choose_backend(BackendChoice::Cpu, BackendKind::Cuda), ResourceError);
  }
}

TEST_CASE("the --max-memory cap refuses a plan before any device is started", "[runner]") {
  const TempDir dir;
  RunOptions options;
  options.max_memory_bytes = 4096;
  CHECK_THROWS_WITH(run_scenario(tiny_scenario(dir), options), Contains("--max-memory allows 4.00 KiB"));
}

TEST_CASE("a tiny run: repeats, tokens and logits shaped by the workload, deterministic", "[runner]") {
  const TempDir dir;
  const Scenario scenario = tiny_scenario(dir);
  RunOptions options;
  options.threads = 1;
  const RunResult result = run_scenario(scenario, options);

  CHECK(result.backend == "cpu");
  CHECK_FALSE(result.device.empty());
  REQUIRE(result.repeats.size() == 2);
  for (const GenerationTiming& timing : result.repeats) {
    CHECK(timing.decode_tokens == 3 * 4);  // every request's tokens after the first
    CHECK(timing.decode_ms > 0);
  }
  REQUIRE(result.tokens.size() == 3);
  for (const auto& tokens : result.tokens) {
    REQUIRE(tokens.size() == 5);
    for (int32_t token : tokens) CHECK((token >= 0 && token < 512));
  }
  CHECK(result.last_logits.size() == 3u * 512u);
  CHECK(result.metrics.decode_tokens_per_s.median > 0);
  CHECK(result.metrics.decode_bandwidth_gbps.median > 0);
  CHECK(result.metrics.decode_wall_ms_per_step.median > 0);
  CHECK(result.metrics.decode_busy_ms_per_step.median > 0);
  CHECK(result.metrics.decode_busy_ms_per_step.median <= result.metrics.decode_wall_ms_per_step.median);
  CHECK(result.stopped_because == "max_repeats reached");
  CHECK(result.memory.total() > 0);

  // Same seed, same tokens; and the fixed twin of a buggy run agrees with it too.
  const Scenario buggy = tiny_scenario(dir, {"bugs.host_sync={per: layer}", "run.repeats=1", "run.warmup=0"});
  const RunResult buggy_result = run_scenario(buggy, options);
  CHECK(buggy_result.tokens == result.tokens);
  const RunResult twin_result = run_scenario(fixed_twin(buggy), options);
  CHECK(twin_result.tokens == result.tokens);
}

TEST_CASE("adaptive repeats: at least min_repeats, then until the target, max_repeats or max_seconds", "[runner]") {
  const RepeatPolicy policy{6, 10, 2.0, 0.03};
  Estimate tight;
  tight.median = 1;
  tight.low = 0.99;
  tight.high = 1.01;
  tight.samples = 6;
  tight.confidence = 0.97;
  Estimate noisy = tight;
  noisy.noisy = true;
  RepeatStop stop = RepeatStop::MaxSeconds;
  CHECK(want_another_repeat(policy, 5, 100.0, tight, stop));  // below min_repeats: always more
  CHECK_FALSE(want_another_repeat(policy, 6, 0.1, tight, stop));
  CHECK(stop == RepeatStop::TargetReached);
  CHECK(want_another_repeat(policy, 6, 0.1, noisy, stop));
  CHECK_FALSE(want_another_repeat(policy, 10, 0.1, noisy, stop));
  CHECK(stop == RepeatStop::MaxRepeats);
  CHECK_FALSE(want_another_repeat(policy, 7, 2.5, noisy, stop));
  CHECK(stop == RepeatStop::MaxSeconds);
  CHECK(std::string(describe(stop)) == "max_seconds reached");
}

TEST_CASE("a buggy scenario on its fixed twin's weights gives the tokens and logits of its own copy", "[runner]") {
  const TempDir dir;
  for (const char* bug : {"bugs.fp32_ops={scope: all}", "bugs.non_contiguous={mode: copy}", "bugs.no_kv_cache=true"}) {
    INFO(bug);
    const Scenario buggy = tiny_scenario(dir, {"dtype=fp16", bug});
    const Scenario fixed = fixed_twin(buggy);
    CHECK(same_weights(buggy, fixed));
    std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, BackendOptions::with_threads(1));
    LoadedScenario fixed_loaded(*backend, fixed, std::nullopt);
    LoadedScenario sharing(*backend, buggy, std::nullopt, fixed_loaded);
    LoadedScenario own(*backend, buggy, std::nullopt);
    const GenerationResult fixed_before = fixed_loaded.generate(nullptr);
    const GenerationResult from_shared = sharing.generate(nullptr);
    const GenerationResult from_own = own.generate(nullptr);
    CHECK(from_shared.tokens == from_own.tokens);
    CHECK(from_shared.last_logits == from_own.last_logits);
    CHECK(fixed_before.tokens == from_shared.tokens);  // bugs never change results
    // The buggy run left the weights they share as they were: the fixed twin's logits are unchanged.
    CHECK(fixed_loaded.generate(nullptr).last_logits == fixed_before.last_logits);
  }
}

TEST_CASE("weights are shared only between scenarios that load the same ones", "[runner]") {
  const TempDir dir;
  const Scenario base = tiny_scenario(dir);
  CHECK(same_weights(base, fixed_twin(tiny_scenario(dir, {"bugs.sequential_generation=true"}))));
  CHECK(same_weights(base, tiny_scenario(dir, {"workload.requests=1", "workload.batch_size=1"})));
  CHECK_FALSE(same_weights(base, tiny_scenario(dir, {"workload.seed=12"})));
  CHECK_FALSE(same_weights(base, tiny_scenario(dir, {"dtype=bf16"})));
  CHECK_FALSE(same_weights(base, tiny_scenario(dir, {"model=lab-small"})));
  std::unique_ptr<Backend> backend = make_backend(BackendKind::Cpu, BackendOptions::with_threads(1));
  const LoadedScenario loaded(*backend, base, std::nullopt);
  CHECK_THROWS_AS(LoadedScenario(*backend, tiny_scenario(dir, {"workload.seed=12"}), std::nullopt, loaded),
                  std::invalid_argument);
}
