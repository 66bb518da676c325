// The decode loop's graph path, without a GPU: a backend that records the ops issued
// between begin_capture() and end_capture() and replays them on the CPU backend. Replayed
// steps must give the tokens and logits of the eager path, and capture must happen once
// per group, never for steps whose ops change (no KV cache, host syncs, cache copies).
#include <catch2/catch.hpp>

#include <functional>

#include "engine/weights.h"
#include "tests/support/engine_fixtures.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

class RecordingGraphBackend : public Backend {
 public:
  RecordingGraphBackend() : cpu_(make_backend(BackendKind::Cpu, {})) {}

  int captures = 0;
  int replays = 0;

  std::string name() const override { return "cpu-graphs"; }
  std::string device_description() const override { return cpu_->device_description(); }
  void* allocate(size_t bytes) override { return cpu_->allocate(bytes); }
  void release(void* pointer) override { cpu_->release(pointer); }
  size_t available_memory() const override { return cpu_->available_memory(); }
  void upload(void* d, const void* h, size_t b) override { cpu_->upload(d, h, b); }
  void upload_async(void* d, const void* h, size_t b, OpId id) override { cpu_->upload_async(d, h, b, id); }
  void copy_to_host(void* h, const void* d, size_t b, bool pinned, OpId id) override {
    cpu_->copy_to_host(h, d, b, pinned, id);
  }
  void synchronize() override { cpu_->synchronize(); }
  void marker(OpId id) override { cpu_->marker(id); }
  std::vector<OpTiming> take_timings() override { return cpu_->take_timings(); }

  bool supports_graphs() const override { return true; }
  void begin_capture() override {
    graph_.clear();
    capturing_ = true;
    ++captures;
  }
  void end_capture() override { capturing_ = false; }
  void replay_captured(OpId id) override {
    ++replays;
    cpu_->marker(id);
    for (const auto& op : graph_) op();
  }

  void embedding(const Tensor& t, const Tensor& k, const Tensor& p, int r, const Tensor& o, OpId id) override {
    run([=, this] { cpu_->embedding(t, k, p, r, o, id); });
  }
  void rmsnorm(const Tensor& x, const Tensor& w, float e, const Tensor& o, OpId id) override {
    run([=, this] { cpu_->rmsnorm(x, w, e, o, id); });
  }
  void matmul(const Tensor& x, const Tensor& w, const Tensor& o, OpId id) override {
    run([=, this] { cpu_->matmul(x, w, o, id); });
  }
  void rope(const Tensor& q, const Tensor& k, const Tensor& p, const Tensor& f, int d, OpId id) override {
    run([=, this] { cpu_->rope(q, k, p, f, d, id); });
  }
  void kv_store(const Tensor& k, const Tensor& v, const Tensor& kc, const Tensor& vc, const Tensor& p, int r,
                OpId id) override {
    run([=, this] { cpu_->kv_store(k, v, kc, vc, p, r, id); });
  }
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& p, int r, float s, const Tensor& o,
                 OpId id) override {
    run([=, this] { cpu_->attention(q, k, v, p, r, s, o, id); });
  }
  void swiglu(const Tensor& g, const Tensor& u, const Tensor& o, OpId id) override {
    run([=, this] { cpu_->swiglu(g, u, o, id); });
  }
  void add(const Tensor& a, const Tensor& b, const Tensor& o, OpId id) override {
    run([=, this] { cpu_->add(a, b, o, id); });
  }
  void argmax(const Tensor& l, const Tensor& t, const Tensor& p, OpId id) override {
    run([=, this] { cpu_->argmax(l, t, p, id); });
  }
  void cast(const Tensor& x, const Tensor& o, OpId id) override { run([=, this] { cpu_->cast(x, o, id); }); }
  void copy(const Tensor& s, const Tensor& o, OpId id) override { run([=, this] { cpu_->copy(s, o, id); }); }
  void fill_positions(const Tensor& o, int s, int p, OpId id) override {
    run([=, this] { cpu_->fill_positions(o, s, p, id); });
  }
  void advance_positions(const Tensor& p, OpId id) override { run([=, this] { cpu_->advance_positions(p, id); }); }

 private:
  void run(std::function<void()> op) {
    if (capturing_) {
      graph_.push_back(std::move(op));
    } else {
      op();
    }
  }

  std::unique_ptr<Backend> cpu_;
  std::vector<std::function<void()>> graph_;
  bool capturing_ = false;
};

GenerationResult generate_with(Backend& backend, const GenerationCase& test_case) {
  Engine engine(backend, test_case.config,
                random_weights(backend, test_case.config, test_case.dtype, test_case.weight_seed), test_case.bugs);
  return engine.generate(test_case.workload, nullptr);
}

GenerationCase graph_case() {
  GenerationCase test_case;
  test_case.dtype = DType::BF16;
  test_case.workload.requests = 5;
  test_case.workload.batch_size = 2;  // groups of 2, 2, 1: one capture each
  test_case.workload.prompt_tokens = 6;
  test_case.workload.new_tokens = 7;
  return test_case;
}

}  // namespace

TEST_CASE("replayed decode steps give the eager path's tokens and logits", "[generator][graphs]") {
  const GenerationCase test_case = graph_case();
  const GenerationResult eager = generate_on_cpu(test_case);
  RecordingGraphBackend backend;
  const GenerationResult replayed = generate_with(backend, test_case);
  CHECK(backend.captures == 3);
  CHECK(backend.replays == 3 * 6);
  CHECK(replayed.tokens == eager.tokens);
  CHECK(replayed.last_logits == eager.last_logits);
  CHECK(replayed.timing.step_ms.size() == eager.timing.step_ms.size());
}

TEST_CASE("steps whose ops change from step to step are never captured", "[generator][graphs]") {
  std::vector<BugSet> uncapturable(3);
  uncapturable[0].no_kv_cache = true;
  uncapturable[1].host_sync = true;
  uncapturable[2].non_contiguous = true;  // mode copy: the copy grows with the cache
  const GenerationResult eager = generate_on_cpu(graph_case());
  for (const BugSet& bugs : uncapturable) {
    GenerationCase test_case = graph_case();
    test_case.bugs = bugs;
    RecordingGraphBackend backend;
    const GenerationResult result = generate_with(backend, test_case);
    INFO(bugs.describe());
    CHECK(backend.captures == 0);
    CHECK(result.tokens == eager.tokens);
  }
  // A strided cache and fp32 projections keep every step's ops alike: they replay.
  GenerationCase capturable = graph_case();
  capturable.bugs.non_contiguous = true;
  capturable.bugs.non_contiguous_mode = NonContiguousMode::Strided;
  capturable.bugs.fp32_ops = true;
  RecordingGraphBackend backend;
  CHECK(generate_with(backend, capturable).tokens == eager.tokens);
  CHECK(backend.captures == 3);
}
