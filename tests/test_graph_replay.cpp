// The decode loop's graph path, without a GPU: a backend that records the ops issued
// between begin_capture() and end_capture() and replays them on the CPU backend. Replayed
// steps must give the tokens and logits of the eager path, and capture must happen once
// per group, never for steps whose ops change (no KV cache, host syncs, cache copies).
// The same backend plans attention with the CUDA backend's own planning object
// (cuda::AttentionWorkspace, engine/cuda/host/attention_plan.h, which CudaBackend::
// attention and reserve_attention call): a captured step must plan attention as an eager
// step does, which needs the workspace reserved before the capture.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>

#include "engine/cuda/host/attention_plan.h"
#include "engine/model/weights.h"
#include "tests/support/engine_fixtures.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

class RecordingGraphBackend : public Backend {
 public:
  explicit RecordingGraphBackend(bool graphs = true) : cpu_(make_backend(BackendKind::Cpu, {})), graphs_(graphs) {}

  int captures = 0;
  int replays = 0;

  // The plan the CUDA backend would give each attention call on a device of an H200's
  // size, and whether the call was being captured.
  static constexpr int kMultiprocessors = 132;
  struct PlannedAttention {
    cuda::AttentionShape shape;
    cuda::AttentionPlan plan;
    bool captured = false;
    bool smaller_than_device_plan = false;  // what CudaBackend warns about
  };
  bool reserves = true;  // false: reserve_attention is ignored, as a backend that forgot it
  std::vector<PlannedAttention> attention_plans;

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

  bool supports_graphs() const override { return graphs_; }
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
  // As CudaBackend::reserve_attention and ::attention, through the same calls.
  void reserve_attention(const AttentionBounds& b) override {
    if (reserves) workspace_.reserve({b.max_rows, b.heads, b.kv_heads, b.head_dim, b.capacity});
  }
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& p, int r, float s, const Tensor& o,
                 OpId id) override {
    const cuda::AttentionShape shape = cuda::attention_shape_of(q.shape[0], q.shape[1], k.shape.data());
    const cuda::AttentionWorkspace::Call call = workspace_.plan(shape, capturing_);
    CHECK(call.floats <= workspace_.reserved_floats());  // the workspace the kernel is handed holds the plan
    attention_plans.push_back({shape, call.plan, capturing_, call.smaller_than_device_plan()});
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
  bool graphs_;
  std::vector<std::function<void()>> graph_;
  bool capturing_ = false;
  cuda::AttentionWorkspace workspace_{kMultiprocessors};
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

TEST_CASE("a captured decode step plans attention as an eager step does", "[generator][graphs]") {
  // A context long enough for decode attention to split its keys (prefill, with hundreds of
  // rows, fills the device unsplit); groups of 2 and 1 sequences plan differently.
  GenerationCase test_case = graph_case();
  test_case.workload.requests = 3;
  test_case.workload.prompt_tokens = 200;
  test_case.workload.new_tokens = 4;
  RecordingGraphBackend eager(/*graphs=*/false);
  const GenerationResult eager_result = generate_with(eager, test_case);
  RecordingGraphBackend graphs;
  const GenerationResult graph_result = generate_with(graphs, test_case);
  CHECK(graph_result.tokens == eager_result.tokens);

  auto same_shape = [](const cuda::AttentionShape& a, const cuda::AttentionShape& b) {
    return a.rows == b.rows && a.heads == b.heads && a.kv_heads == b.kv_heads && a.head_dim == b.head_dim &&
           a.capacity == b.capacity;
  };
  int captured = 0;
  for (const auto& call : graphs.attention_plans) {
    if (!call.captured) continue;
    ++captured;
    INFO("captured attention: " << call.shape.rows << " rows, capacity " << call.shape.capacity);
    CHECK(call.plan.splits > 1);  // the case exercises a split: an unsplit fallback would show
    CHECK(call.plan == cuda::plan_attention(call.shape, RecordingGraphBackend::kMultiprocessors));
    const auto eager_call = std::find_if(eager.attention_plans.begin(), eager.attention_plans.end(),
                                         [&](const auto& other) { return same_shape(other.shape, call.shape); });
    REQUIRE(eager_call != eager.attention_plans.end());
    CHECK(eager_call->plan == call.plan);
    CHECK_FALSE(call.smaller_than_device_plan);
  }
  CHECK(captured == 2 * test_case.config.num_hidden_layers);  // one capture per group, one call per layer

  // Without the reservation the same glue shrinks a captured plan, and says so: the check
  // above can fail.
  RecordingGraphBackend unreserved;
  unreserved.reserves = false;
  CHECK(generate_with(unreserved, test_case).tokens == eager_result.tokens);
  const bool some_smaller = std::any_of(unreserved.attention_plans.begin(), unreserved.attention_plans.end(),
                                        [](const auto& call) { return call.captured && call.smaller_than_device_plan; });
  CHECK(some_smaller);
}

TEST_CASE("attention planning: the reservation covers every row count up to the largest", "[graphs]") {
  const cuda::AttentionShape largest{64, 32, 8, 64, 4096};  // llama-1b, 64 sequences of 4096 positions
  const size_t reserved = cuda::attention_workspace_floats_up_to(largest, 132);
  bool some_split = false;
  for (int64_t rows = 1; rows <= largest.rows; ++rows) {
    cuda::AttentionShape shape = largest;
    shape.rows = rows;
    const cuda::AttentionPlan plan = cuda::plan_attention(shape, 132);
    some_split = some_split || plan.splits > 1;
    CHECK(cuda::attention_workspace_floats(shape, plan) <= reserved);
    CHECK(cuda::plan_attention_within(shape, 132, reserved, /*may_grow=*/false) == plan);
  }
  CHECK(some_split);
  // Without the reservation a capture (no allocation) falls back to one split.
  cuda::AttentionShape one_row = largest;
  one_row.rows = 1;
  CHECK(cuda::plan_attention_within(one_row, 132, 0, /*may_grow=*/false).splits == 1);
  CHECK(cuda::plan_attention(one_row, 132).splits > 1);
}
