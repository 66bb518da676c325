// The decode loop: the KV-cache path equals a full recompute, batched equals one at a
// time, random init and prompts are deterministic per seed, timings are filled in and
// taken only at the run's end.
#include <catch2/catch.hpp>

#include "engine/model/weights.h"
#include "tests/support/counting_backend.h"
#include "tests/support/engine_fixtures.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

// A run's host side on a virtual clock, with a device timer whose take costs `take_cost_ns`
// of host time (CUPTI's forced flush) or nothing (the events timer). The device never
// holds the host back here, so a marker's time is the host's when it was enqueued: a
// step's time is the host time spent inside it (each blocking read costs kReadNs, each
// take its cost), and the timer's cost shows in a step exactly when a take happens in it.
class SimulatedTimerBackend final : public CountingBackend {
 public:
  static constexpr int64_t kReadNs = 20'000;
  SimulatedTimerBackend(int64_t take_cost_ns)
      : CountingBackend(make_backend(BackendKind::Cpu, {})), take_cost_ns_(take_cost_ns) {}

  void copy_to_host(void* destination, const void* source, size_t bytes, bool pinned, OpId id) override {
    CountingBackend::copy_to_host(destination, source, bytes, pinned, id);
    host_ns_ += kReadNs;
  }
  void marker(OpId id) override {
    CountingBackend::marker(id);
    recorded_.push_back({id, host_ns_, host_ns_});
  }
  std::vector<OpTiming> take_timings() override {
    CountingBackend::take_timings();  // the real stream's timings, replaced by the virtual ones
    host_ns_ += take_cost_ns_;
    std::vector<OpTiming> taken;
    taken.swap(recorded_);
    return taken;
  }

 private:
  int64_t take_cost_ns_;
  int64_t host_ns_ = 1'000'000;
  std::vector<OpTiming> recorded_;
};

GenerationCase small_case(DType dtype) {
  GenerationCase test_case;
  test_case.dtype = dtype;
  test_case.workload.requests = 3;
  test_case.workload.batch_size = 3;
  test_case.workload.prompt_tokens = 7;
  test_case.workload.new_tokens = 6;
  test_case.workload.seed = 11;
  return test_case;
}

}  // namespace

TEST_CASE("generation produces the requested shape and clocks", "[generator]") {
  const GenerationCase test_case = small_case(DType::F32);
  const GenerationResult result = generate_on_cpu(test_case);
  REQUIRE(result.tokens.size() == 3);
  for (const auto& tokens : result.tokens) {
    REQUIRE(tokens.size() == 6);
    for (int32_t token : tokens) REQUIRE((token >= 0 && token < 512));
  }
  REQUIRE(result.last_logits.size() == 3 * 512);
  CHECK(result.timing.groups == 1);
  CHECK(result.timing.step_ms.size() == 5);
  CHECK(result.timing.decode_tokens == 3 * 5);
  CHECK(result.timing.ttft_ms > 0);
  CHECK(result.timing.decode_ms > 0);
  CHECK(result.timing.total_ms >= result.timing.decode_ms);
}

TEST_CASE("the last logits are the ones the last token was chosen from", "[generator]") {
  const GenerationResult result = generate_on_cpu(small_case(DType::F32));
  for (size_t request = 0; request < result.tokens.size(); ++request) {
    const float* row = result.last_logits.data() + request * 512;
    int best = 0;
    for (int i = 1; i < 512; ++i)
      if (row[i] > row[best]) best = i;
    CHECK(result.tokens[request].back() == best);
  }
}

TEST_CASE("KV-cache decode equals a full recompute of the prefix", "[generator]") {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    GenerationCase cached = small_case(dtype);
    GenerationCase recompute = cached;
    recompute.bugs.no_kv_cache = true;
    const GenerationResult a = generate_on_cpu(cached);
    const GenerationResult b = generate_on_cpu(recompute);
    INFO("dtype " << dtype_name(dtype));
    CHECK(a.tokens == b.tokens);
    CHECK(a.last_logits == b.last_logits);
  }
}

TEST_CASE("batched decode equals one request at a time", "[generator]") {
  for (DType dtype : {DType::F32, DType::BF16}) {
    GenerationCase batched = small_case(dtype);
    batched.workload.requests = 5;
    batched.workload.batch_size = 2;  // groups of 2, 2, 1
    GenerationCase single = batched;
    single.workload.batch_size = 1;
    const GenerationResult a = generate_on_cpu(batched);
    const GenerationResult b = generate_on_cpu(single);
    INFO("dtype " << dtype_name(dtype));
    CHECK(a.timing.groups == 3);
    CHECK(b.timing.groups == 5);
    CHECK(a.tokens == b.tokens);
    CHECK(a.last_logits == b.last_logits);
  }
}

TEST_CASE("random weights and prompts are deterministic per seed", "[generator]") {
  const GenerationCase base = small_case(DType::F16);
  const GenerationResult first = generate_on_cpu(base);
  const GenerationResult again = generate_on_cpu(base);
  CHECK(first.tokens == again.tokens);
  CHECK(first.last_logits == again.last_logits);

  GenerationCase other_weights = base;
  other_weights.weight_seed = 8;
  CHECK(generate_on_cpu(other_weights).last_logits != first.last_logits);

  GenerationCase other_prompts = base;
  other_prompts.workload.seed = 12;
  CHECK(prompt_for_request(other_prompts.workload, 0, 512) != prompt_for_request(base.workload, 0, 512));
  CHECK(prompt_for_request(base.workload, 0, 512) != prompt_for_request(base.workload, 1, 512));
}

TEST_CASE("explicit prompt ids are used for every request", "[generator]") {
  GenerationCase test_case = small_case(DType::F32);
  test_case.workload.prompt_ids = {5, 17, 300};
  const GenerationResult result = generate_on_cpu(test_case);
  // Same prompt, same weights: every request generates the same tokens.
  CHECK(result.tokens[0] == result.tokens[1]);
  CHECK(result.tokens[1] == result.tokens[2]);
}

TEST_CASE("the memory plan counts weights, cache and the bugs' extras", "[generator]") {
  const ModelConfig config = lab_tiny_config();
  Workload workload;
  workload.requests = 4;
  workload.batch_size = 4;
  workload.prompt_tokens = 16;
  workload.new_tokens = 16;
  const MemoryPlan fixed = plan_memory(config, DType::F16, workload, BugSet{});
  CHECK(fixed.weight_bytes == config.parameter_count() * 2);
  CHECK(fixed.kv_cache_bytes == config.kv_bytes_per_position(DType::F16) * 4 * 32);
  CHECK(fixed.extra_weight_bytes == 0);

  BugSet fp32_matmuls;
  fp32_matmuls.fp32_ops = true;
  const MemoryPlan buggy = plan_memory(config, DType::F16, workload, fp32_matmuls);
  // fp32 copies of every projection and the LM head: all parameters but the embedding and norms.
  CHECK(buggy.extra_weight_bytes == 4 * (config.parameter_count() - 512 * 128 - (2 * 2 + 1) * 128));

  BugSet sequential;
  sequential.sequential_generation = true;
  CHECK(plan_memory(config, DType::F16, workload, sequential).kv_cache_bytes == fixed.kv_cache_bytes / 4);
}

TEST_CASE("device timings are taken at the run's end, never at a host read inside a step", "[generator]") {
  // Taking timings costs host time that depends on the timer (CUPTI flushes its buffers,
  // events are queried): were it done at each host read, host_sync's steps would be slower
  // under CUPTI than under events. With no take inside the steps, both timers give the same
  // host-side step time for the same recorded run.
  for (HostSyncPer per : {HostSyncPer::Token, HostSyncPer::Layer, HostSyncPer::Sequence}) {
    GenerationCase test_case = small_case(DType::F32);
    test_case.bugs.host_sync = true;
    test_case.bugs.host_sync_per = per;
    CountingBackend backend(make_backend(BackendKind::Cpu, {}));
    Engine engine(backend, test_case.config, random_weights(backend, test_case.config, test_case.dtype, 7),
                  test_case.bugs);
    const int64_t reads_before = backend.host_reads();
    const int64_t takes_before = backend.timing_takes();
    const GenerationResult result = engine.generate(test_case.workload, nullptr);
    INFO("host_sync per " << to_string(per));
    CHECK(backend.host_reads() - reads_before > 5);  // the bug's reads, then the final two
    CHECK(backend.timing_takes() - takes_before == 1);  // the final synchronize
    CHECK(backend.timing_takes_between_reads() == 0);
    CHECK(result.timing.step_ms.size() == 5);
    for (double step : result.timing.step_ms) CHECK(step > 0);  // every marker still timed
  }
}

TEST_CASE("both timers give the same host-side step time for the same run", "[generator]") {
  // The same run under a timer whose take costs nothing (events) and one whose take costs
  // 300 us of host time (a forced CUPTI flush): with takes only at the run's end, each step
  // is charged for its own host reads and nothing else, under either timer.
  for (HostSyncPer per : {HostSyncPer::Token, HostSyncPer::Layer, HostSyncPer::Sequence}) {
    GenerationCase test_case = small_case(DType::F32);
    test_case.bugs.host_sync = true;
    test_case.bugs.host_sync_per = per;
    INFO("host_sync per " << to_string(per));
    std::vector<std::vector<double>> step_ms;
    for (int64_t take_cost_ns : {int64_t{0}, int64_t{300'000}}) {
      SimulatedTimerBackend backend(take_cost_ns);
      Engine engine(backend, test_case.config, random_weights(backend, test_case.config, test_case.dtype, 7),
                    test_case.bugs);
      step_ms.push_back(engine.generate(test_case.workload, nullptr).timing.step_ms);
    }
    REQUIRE(step_ms[0].size() == 5);
    CHECK(step_ms[1] == step_ms[0]);
    for (double step : step_ms[0]) CHECK(step >= SimulatedTimerBackend::kReadNs / 1e6);  // the bug's reads
  }
}
