// Resource limits: the memory plan covers every device allocation the engine makes (each
// bug's extra buffers included) and is not padded either — checked against the peak a
// counting backend sees; absurd sizes saturate instead of wrapping around; an impossible
// request (or a broken checkpoint) fails before a single allocation, with the numbers.
#include <catch2/catch.hpp>

#include "engine/cpu/cpu_backend.h"
#include "engine/base/errors.h"
#include "engine/checkpoint/hf_checkpoint.h"
#include "engine/model/weights.h"
#include "lab/run/runner.h"
#include "support/counting_backend.h"
#include "support/safetensors_writer.h"
#include "support/temp_dir.h"
#include "tests/support/engine_fixtures.h"

using namespace decodelab;
using Catch::Matchers::Contains;
using decodelab::testing::CountingBackend;
using decodelab::testing::TempDir;

namespace {

struct PlanCase {
  const char* name;
  DType dtype;
  BugSet bugs;
};

std::vector<PlanCase> plan_cases() {
  std::vector<PlanCase> cases;
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) cases.push_back({"fixed", dtype, BugSet{}});
  BugSet bugs;
  bugs.no_kv_cache = true;
  cases.push_back({"no_kv_cache", DType::F16, bugs});
  bugs = BugSet{};
  bugs.non_contiguous = true;
  cases.push_back({"non_contiguous copy", DType::F16, bugs});
  bugs.non_contiguous_mode = NonContiguousMode::Strided;
  cases.push_back({"non_contiguous strided", DType::BF16, bugs});
  bugs = BugSet{};
  bugs.host_sync = true;
  bugs.host_sync_per = HostSyncPer::Layer;
  cases.push_back({"host_sync", DType::F32, bugs});
  for (Fp32Scope scope : {Fp32Scope::Norms, Fp32Scope::Matmuls, Fp32Scope::All}) {
    bugs = BugSet{};
    bugs.fp32_ops = true;
    bugs.fp32_scope = scope;
    cases.push_back({"fp32_ops", DType::F16, bugs});
  }
  bugs = BugSet{};
  bugs.sequential_generation = true;
  cases.push_back({"sequential_generation", DType::F16, bugs});
  bugs = BugSet{};
  bugs.no_kv_cache = bugs.non_contiguous = bugs.host_sync = bugs.fp32_ops = bugs.sequential_generation = true;
  bugs.fp32_scope = Fp32Scope::All;
  cases.push_back({"all five", DType::BF16, bugs});
  return cases;
}

Scenario scenario_from(const TempDir& dir, const std::string& yaml) { return load_scenario(dir.write("s.yaml", yaml)); }

}  // namespace

TEST_CASE("the memory plan covers every allocation the engine makes, for every bug", "[memory]") {
  const ModelConfig config = testing::lab_tiny_config();
  Workload workload;
  workload.requests = 3;
  workload.batch_size = 2;
  workload.prompt_tokens = 5;
  workload.new_tokens = 4;
  for (const PlanCase& plan_case : plan_cases()) {
    INFO(plan_case.name << " " << dtype_name(plan_case.dtype) << " " << plan_case.bugs.describe());
    const MemoryPlan plan = plan_memory(config, plan_case.dtype, workload, plan_case.bugs);
    CountingBackend backend(make_cpu_backend({}));
    {
      Engine engine(backend, config, random_weights(backend, config, plan_case.dtype, 3), plan_case.bugs);
      engine.generate(workload, nullptr);
      engine.generate(workload, nullptr);  // a second generation reuses what the first reserved
    }
    CHECK(backend.live_bytes() == 0);
    CHECK(backend.peak_bytes() <= plan.total());
    // Not padded either: only the position buffers are planned with a little slack.
    CHECK(plan.total() - backend.peak_bytes() <= 64);
  }
}

TEST_CASE("the memory plan grows with each part of the workload", "[memory]") {
  const ModelConfig config = testing::lab_tiny_config();
  Workload workload;
  workload.requests = 4;
  workload.batch_size = 4;
  workload.prompt_tokens = 8;
  workload.new_tokens = 8;
  const MemoryPlan base = plan_memory(config, DType::F16, workload, BugSet{});
  CHECK(base.host_bytes > 0);
  Workload longer = workload;
  longer.new_tokens = 16;
  CHECK(plan_memory(config, DType::F16, longer, BugSet{}).kv_cache_bytes == base.kv_cache_bytes / 16 * 24);
  Workload more = workload;
  more.requests = 8;
  const MemoryPlan more_requests = plan_memory(config, DType::F16, more, BugSet{});
  CHECK(more_requests.kv_cache_bytes == base.kv_cache_bytes);  // still batches of 4
  CHECK(more_requests.workspace_bytes > base.workspace_bytes);  // token history and logits of every request
  CHECK(more_requests.host_bytes > base.host_bytes);
}

TEST_CASE("absurd sizes saturate instead of wrapping around", "[memory]") {
  ModelConfig config = testing::lab_tiny_config();
  config.max_position_embeddings = INT32_MAX;
  Workload workload;
  workload.requests = INT32_MAX;
  workload.batch_size = INT32_MAX;
  workload.prompt_tokens = INT32_MAX / 2;
  workload.new_tokens = INT32_MAX / 2;
  for (bool no_cache : {false, true}) {
    BugSet bugs;
    bugs.no_kv_cache = no_cache;
    const MemoryPlan plan = plan_memory(config, DType::F32, workload, bugs);
    CHECK(plan.kv_cache_bytes == kSaturatedBytes);
    CHECK(plan.workspace_bytes == kSaturatedBytes);
    CHECK(plan.total() == kSaturatedBytes);
    CHECK_THROWS_WITH(check_memory_fits(plan, int64_t{1} << 40, std::nullopt, "run", "the cpu backend"),
                      Contains("needs more than 8 EiB") && Contains("KV cache more than 8 EiB"));
  }
}

TEST_CASE("a model too large to plan is refused as bad input", "[memory]") {
  ModelConfig config = testing::lab_tiny_config();
  config.hidden_size = 1 << 30;
  config.intermediate_size = 1 << 30;
  config.num_attention_heads = 1 << 10;
  config.num_key_value_heads = 1 << 10;
  config.head_dim = 0;
  config.num_hidden_layers = 1000;
  CHECK_THAT(config.finalize_and_validate(), Contains("parameters") && Contains("hidden_size"));
  config = testing::lab_tiny_config();
  config.head_dim = 1 << 30;
  CHECK_THAT(config.finalize_and_validate(), Contains("num_attention_heads × head_dim"));
}

TEST_CASE("an impossible request fails before anything is allocated, with the numbers", "[memory]") {
  const TempDir dir;
  // llama-8b in fp32 with a batch of 4096 at its full context: a KV cache of 128 TiB.
  const Scenario huge = scenario_from(dir,
                                      "model: llama-8b\ndtype: fp32\nbackend: cpu\n"
                                      "workload: {requests: 4096, batch_size: 4096, prompt_tokens: 131000, "
                                      "new_tokens: 72}\n");
  CountingBackend backend(make_cpu_backend({}), size_t{64} << 30);
  RunOptions options;
  CHECK_THROWS_AS(run_scenario(huge, options, &backend), ResourceError);
  CHECK_THROWS_WITH(run_scenario(huge, options, &backend),
                    Contains("scenario s (llama-8b fp32) needs") && Contains("weights 29.92 GiB") &&
                        Contains("KV cache 128.00 TiB") && Contains("has 64.00 GiB available"));
  CHECK(backend.allocations() == 0);

  // The user's cap refuses a plan that the machine could hold.
  const Scenario tiny = scenario_from(dir,
                                      "model: lab-tiny\ndtype: fp32\nbackend: cpu\n"
                                      "workload: {requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 4}\n");
  options.max_memory_bytes = 1 << 20;
  CHECK_THROWS_WITH(run_scenario(tiny, options, &backend), Contains("--max-memory allows 1.00 MiB"));
  CHECK(backend.allocations() == 0);
  options.max_memory_bytes.reset();
  CHECK_NOTHROW(run_scenario(tiny, options, &backend));  // the same backend runs what fits
  CHECK(backend.allocations() > 0);
}

TEST_CASE("on the CPU backend the host copies count against the same memory", "[memory]") {
  MemoryPlan plan;
  plan.weight_bytes = 600 << 20;
  plan.host_bytes = 200 << 20;
  CHECK(bytes_needed(plan, false) == plan.weight_bytes);
  CHECK(bytes_needed(plan, true) == plan.weight_bytes + plan.host_bytes);
  CHECK_NOTHROW(check_memory_fits(plan, 700 << 20, std::nullopt, "run", "the cuda backend", false));
  CHECK_THROWS_WITH(check_memory_fits(plan, 700 << 20, std::nullopt, "run", "the cpu backend", true),
                    Contains("needs 800.00 MiB") && Contains("host copies 200.00 MiB"));
  const MemoryPlan both = combined(plan, plan);
  CHECK(both.total() == 2 * plan.total());
  CHECK(both.host_bytes == 2 * plan.host_bytes);
}

TEST_CASE("a broken checkpoint is refused before any weight is allocated", "[memory]") {
  const TempDir dir;
  const ModelConfig config = testing::lab_tiny_config();
  testing::CheckpointOptions options;
  options.defect = testing::Defect::ShapeDisagreesWithConfig;
  options.defect_target = "model.layers.1.mlp.down_proj.weight";  // among the last tensors checked
  testing::write_checkpoint(dir.path() / "ckpt", config, options);
  CountingBackend backend(make_cpu_backend({}));
  CHECK_THROWS_AS(load_hf_weights(backend, dir.path() / "ckpt", config, DType::F16), InputError);
  CHECK(backend.allocations() == 0);
  // The same checkpoint without the defect loads.
  testing::write_checkpoint(dir.path() / "good", config, {});
  CHECK_NOTHROW(load_hf_weights(backend, dir.path() / "good", config, DType::F16));
  CHECK(backend.allocations() > 0);
}

TEST_CASE("a twin that shares the loaded weights allocates none, and is refused when the rest does not fit",
          "[memory]") {
  const TempDir dir;
  const Scenario buggy = scenario_from(dir,
                                       "model: lab-tiny\ndtype: fp16\nbackend: cpu\n"
                                       "workload: {requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 4}\n"
                                       "bugs: {fp32_ops: {scope: matmuls}}\n");
  const Scenario fixed = fixed_twin(buggy);
  const MemoryPlan plan = plan_memory(buggy.model_config, buggy.dtype, buggy.workload, buggy.bugs);
  REQUIRE(plan.weight_bytes > 0);
  REQUIRE(plan.extra_weight_bytes > 0);
  CHECK(without_weights(plan).weight_bytes == 0);
  CHECK(without_weights(plan).total() == plan.total() - plan.weight_bytes);

  CountingBackend backend(make_cpu_backend({}));
  const LoadedScenario loaded(backend, fixed, std::nullopt);
  const int64_t after_fixed = backend.live_bytes();
  const LoadedScenario sharing(backend, buggy, std::nullopt, loaded);
  const int64_t shared_bytes = backend.live_bytes() - after_fixed;
  const LoadedScenario own(backend, buggy, std::nullopt);
  const int64_t own_bytes = backend.live_bytes() - after_fixed - shared_bytes;
  // Its own fp32 copies and RoPE table, never a second copy of the weights.
  CHECK(own_bytes - shared_bytes == plan.weight_bytes);
  CHECK(shared_bytes >= plan.extra_weight_bytes);
  CHECK(sharing.memory().weight_bytes == plan.weight_bytes);  // the run's own plan still names its weights

  // A device with room for the rest of the plan but not for it: refused before allocating.
  CountingBackend small(make_cpu_backend({}));
  const LoadedScenario small_loaded(small, fixed, std::nullopt);
  const int64_t before = small.allocations();
  small.set_available(static_cast<size_t>(bytes_needed(without_weights(plan), true) - 1));
  CHECK_THROWS_WITH(LoadedScenario(small, buggy, std::nullopt, small_loaded),
                    Contains("sharing the weights already loaded") && Contains("extra weight copies"));
  CHECK(small.allocations() == before);
  // The user's cap bounds the whole run, weights included.
  CHECK_THROWS_WITH(LoadedScenario(backend, buggy, bytes_needed(plan, true) - 1, loaded),
                    Contains("--max-memory allows"));
}
