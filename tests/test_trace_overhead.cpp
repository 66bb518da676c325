// Benchmark (hidden: run with `decodelab_tests "[.bench]"`): what recording costs. lab-small
// fp16, batch 1, on the CPU backend. Two readings: the time the host spends inside the
// trace's sink calls during a generation (measured in place, so it holds on a loaded
// machine; an upper bound, as it includes the clock reads), and generations with and
// without a Trace alternating, medians compared (the honest end-to-end number, but only
// as steady as the machine). It prints, never asserts on time (timed assertions do not
// belong in unit tests). Also times Trace::op_enqueued alone on a typical op description.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "engine/base/clock.h"
#include "engine/model/generator.h"
#include "engine/model/weights.h"
#include "profiling/trace.h"
#include "tests/support/profiling_fixtures.h"

using namespace decodelab;

namespace {

ModelConfig lab_small_config() {  // configs/models/lab-small.yaml
  ModelConfig config;
  config.name = "lab-small";
  config.vocab_size = 32000;
  config.hidden_size = 1024;
  config.intermediate_size = 2816;
  config.num_hidden_layers = 8;
  config.num_attention_heads = 16;
  config.num_key_value_heads = 16;
  config.max_position_embeddings = 2048;
  config.finalize_and_validate();
  return config;
}

// Forwards to a Trace and adds up the host time spent in each call.
class TimedSink : public EventSink {
 public:
  explicit TimedSink(Trace& trace) : trace_(trace) {}
  void op_enqueued(const OpDesc& op, int64_t begin, int64_t end) override {
    const int64_t start = now_ns();
    trace_.op_enqueued(op, begin, end);
    spent_ns += now_ns() - start;
  }
  void ops_executed(const std::vector<OpTiming>& timings) override {
    const int64_t start = now_ns();
    trace_.ops_executed(timings);
    spent_ns += now_ns() - start;
  }
  void host_call(const HostCall& call) override {
    const int64_t start = now_ns();
    trace_.host_call(call);
    spent_ns += now_ns() - start;
  }
  void range_begin(RangeKind kind, int index, int64_t ns) override {
    const int64_t start = now_ns();
    trace_.range_begin(kind, index, ns);
    spent_ns += now_ns() - start;
  }
  void range_end(RangeKind kind, int index, int64_t ns) override {
    const int64_t start = now_ns();
    trace_.range_end(kind, index, ns);
    spent_ns += now_ns() - start;
  }
  int64_t spent_ns = 0;

 private:
  Trace& trace_;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

TEST_CASE("recording overhead on lab-small fp16 batch 1", "[.bench]") {
  const int repeats = std::getenv("DECODELAB_BENCH_REPEATS") ? std::atoi(std::getenv("DECODELAB_BENCH_REPEATS")) : 5;
  auto backend = make_backend(BackendKind::Cpu, {});
  const ModelConfig config = lab_small_config();
  Engine engine(*backend, config, random_weights(*backend, config, DType::F16, 1), BugSet{});
  Workload workload;
  workload.prompt_tokens = 32;
  workload.new_tokens = 64;

  engine.generate(workload, nullptr);  // warm-up: caches, page faults, thread pool
  std::vector<double> wall_off, wall_on, decode_off, decode_on, recording_share;
  size_t ops_recorded = 0;
  for (int repeat = 0; repeat < repeats; ++repeat) {
    const GenerationResult plain = engine.generate(workload, nullptr);
    wall_off.push_back(plain.timing.total_ms);
    decode_off.push_back(plain.timing.decode_ms);
    Trace trace;
    TimedSink timed(trace);
    const GenerationResult traced = engine.generate(workload, &timed);
    recording_share.push_back(timed.spent_ns * 1e-6 / traced.timing.total_ms);
    wall_on.push_back(traced.timing.total_ms);
    decode_on.push_back(traced.timing.decode_ms);
    ops_recorded = trace.ops().size();
    CHECK(trace.unmatched_timings() == 0);
  }
  std::printf("lab-small fp16 batch 1, %d prompt + %d new tokens, %d repeats (medians):\n", workload.prompt_tokens,
              workload.new_tokens, repeats);
  std::printf("  host time inside the trace's sink calls: %.3f%% of the generation's wall time\n",
              100.0 * median(recording_share));
  std::printf("  wall   without trace %.2f ms, with trace %.2f ms: %+.2f%%\n", median(wall_off), median(wall_on),
              100.0 * (median(wall_on) / median(wall_off) - 1.0));
  std::printf("  decode without trace %.2f ms, with trace %.2f ms: %+.2f%%\n", median(decode_off), median(decode_on),
              100.0 * (median(decode_on) / median(decode_off) - 1.0));
  std::printf("  %zu ops recorded per generation\n", ops_recorded);
  CHECK(ops_recorded > 0);
}

TEST_CASE("Trace::op_enqueued alone, per op", "[.bench]") {
  const OpDesc matmul = decodelab::testing::matmul(1, 1, 1024, 1024, DType::F16);
  const int count = 200'000;
  Trace trace(count);
  const int64_t begin = now_ns();
  OpDesc desc = matmul;
  for (int i = 0; i < count; ++i) {
    desc.id = static_cast<OpId>(i + 1);
    trace.op_enqueued(desc, i, i + 1);
  }
  const int64_t elapsed = now_ns() - begin;
  std::printf("Trace::op_enqueued: %.0f ns per op (%d ops)\n", static_cast<double>(elapsed) / count, count);
  CHECK(trace.ops().size() == static_cast<size_t>(count));
}
