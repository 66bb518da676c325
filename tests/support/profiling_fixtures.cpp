// The synthetic generation trace: the op sequence of one forward pass per prefill and
// decode step, with device times from a roofline-style model of the device.
#include "tests/support/profiling_fixtures.h"

#include <algorithm>

#include "profiling/model/cost_model.h"

namespace decodelab::testing {

DeviceSpec synthetic_cpu_device() {
  DeviceSpec spec;
  spec.name = "synthetic-cpu";
  spec.description = "Synthetic CPU (2 threads)";
  Roofs roofs;
  roofs.bandwidth = 20e9;
  roofs.fp32_flops = 100e9;
  roofs.fp16_flops = 60e9;
  roofs.bf16_flops = 60e9;
  roofs.source = "synthetic test device";
  spec.measured = roofs;
  return spec;
}

namespace {

class Generator {
 public:
  Generator(const SyntheticRun& run, const DeviceSpec& device) : run_(run), roofs_(device.effective_roofs()) {
    trace_.metadata().backend = "cpu";
    trace_.metadata().device = device.description;
    trace_.metadata().dtype = dtype_name(run.dtype);
    trace_.metadata().model = ModelShape{"synthetic", run.hidden, run.intermediate, run.layers, run.heads, run.kv_heads,
                                         run.hidden / run.heads, run.vocab};
    trace_.metadata().device_spec = device;
  }

  Trace generate() {
    trace_.range_begin(RangeKind::Run, -1, host_++);
    trace_.range_begin(RangeKind::Group, 0, host_++);
    emit(marker(next_id_));
    trace_.range_begin(RangeKind::Prefill, 0, host_++);
    forward(run_.prompt, run_.prompt);
    trace_.range_end(RangeKind::Prefill, 0, host_++);
    for (int step = 1; step <= run_.steps; ++step) {
      trace_.range_begin(RangeKind::Step, step, host_++);
      device_ += static_cast<int64_t>(run_.host_gap_us * 1000);
      forward(run_.recompute_prefix ? run_.prompt + step : 1, run_.prompt + step);
      if (run_.sync_each_step) {
        emit(op(next_id_, "memcpy_dtoh", "tokens", OpCategory::Memcpy, {tensor(DType::I32, {1})}, {}));
        trace_.host_call(HostCall{HostCallKind::DeviceToHost, "memcpy_dtoh", host_, device_ + 20'000, 4});
        host_ = std::max(host_, device_ + 20'000);
        device_ += 20'000;  // the host's turnaround before the next enqueue
      }
      emit(marker(next_id_));
      trace_.range_end(RangeKind::Step, step, host_++);
    }
    trace_.range_end(RangeKind::Group, 0, host_++);
    trace_.host_call(HostCall{HostCallKind::Synchronize, "synchronize", host_, device_, 0});
    trace_.range_end(RangeKind::Run, -1, std::max(host_, device_) + 1000);
    return std::move(trace_);
  }

 private:
  void emit(const OpDesc& desc) {
    const OpCost cost = op_cost(desc);
    const double seconds = desc.category == OpCategory::Marker
                               ? 0.0
                               : std::max(cost.flops / roofs_.flops(cost.precision), cost.bytes() / roofs_.bandwidth) / 0.7 + 8e-6;
    const int64_t begin = host_;
    host_ += 2'000;  // 2 µs to enqueue
    const int64_t device_begin = std::max(device_, host_);
    device_ = device_begin + static_cast<int64_t>(seconds * 1e9);
    trace_.add_op(desc, begin, host_, device_begin, device_);
    ++next_id_;
  }

  void forward(int rows, int positions) {
    const DType dtype = run_.dtype;
    const DType weights = run_.fp32_matmuls ? DType::F32 : dtype;
    const int head_dim = run_.hidden / run_.heads;
    const int kv_width = run_.kv_heads * head_dim;
    const int qkv_width = run_.hidden + 2 * kv_width;
    auto matmul = [&](int64_t n, int64_t k, const char* label) {
      emit(op(next_id_, "matmul", label, OpCategory::Matmul, {tensor(weights, {rows, k}), tensor(weights, {n, k})},
              {tensor(weights, {rows, n})}));
    };
    // A column slice of a fused projection's [rows, width] output, as the engine passes it on.
    auto slice = [&](int64_t columns, int64_t width) {
      TensorInfo view = tensor(dtype, {rows, columns});
      view.strides[0] = width;
      return view;
    };
    const TensorInfo q = slice(run_.hidden, qkv_width), k = slice(kv_width, qkv_width);
    const TensorInfo gate_or_up = slice(run_.intermediate, 2 * run_.intermediate);
    emit(op(next_id_, "embedding", "embed_tokens", OpCategory::Embedding,
            {tensor(dtype, {run_.vocab, run_.hidden}), tensor(DType::I32, {1, 64}), tensor(DType::I32, {rows})},
            {tensor(dtype, {rows, run_.hidden})}));
    for (int layer = 0; layer < run_.layers; ++layer) {
      trace_.range_begin(RangeKind::Layer, layer, host_++);
      emit(op(next_id_, "rmsnorm", "input_layernorm", OpCategory::Norm,
              {tensor(dtype, {rows, run_.hidden}), tensor(dtype, {run_.hidden})}, {tensor(dtype, {rows, run_.hidden})}));
      matmul(qkv_width, run_.hidden, "qkv_proj");
      emit(op(next_id_, "rope", "rotary_emb", OpCategory::Rope, {q, k}, {q, k}));
      emit(op(next_id_, "kv_store", "kv_cache", OpCategory::Copy, {k, k},
              {tensor(dtype, {1, run_.kv_heads, 64, head_dim}), tensor(dtype, {1, run_.kv_heads, 64, head_dim})}));
      if (run_.contiguous_copies) {  // .contiguous() on a transposed view of the cache, K then V
        const TensorInfo used = tensor(dtype, {1, run_.kv_heads, positions, head_dim});
        for (int copy = 0; copy < 2; ++copy) emit(op(next_id_, "copy", "contiguous", OpCategory::Copy, {used}, {used}));
      }
      OpDesc attention = op(next_id_, "attention", "self_attn", OpCategory::Attention,
                            {q, tensor(dtype, {1, run_.kv_heads, 64, head_dim})},
                            {tensor(dtype, {rows, run_.hidden})});
      const int64_t pairs = rows == 1 ? positions : int64_t{rows} * (rows + 1) / 2;
      attention.attention = AttentionExtent{pairs, positions, run_.heads, run_.kv_heads, head_dim};
      emit(attention);
      matmul(run_.hidden, run_.hidden, "o_proj");
      emit(op(next_id_, "add", "residual", OpCategory::Elementwise,
              {tensor(dtype, {rows, run_.hidden}), tensor(dtype, {rows, run_.hidden})}, {tensor(dtype, {rows, run_.hidden})}));
      emit(op(next_id_, "rmsnorm", "post_attention_layernorm", OpCategory::Norm,
              {tensor(dtype, {rows, run_.hidden}), tensor(dtype, {run_.hidden})}, {tensor(dtype, {rows, run_.hidden})}));
      matmul(2 * run_.intermediate, run_.hidden, "gate_up_proj");
      emit(op(next_id_, "swiglu", "act_fn", OpCategory::Activation, {gate_or_up, gate_or_up},
              {tensor(dtype, {rows, run_.intermediate})}));
      matmul(run_.hidden, run_.intermediate, "down_proj");
      emit(op(next_id_, "add", "residual", OpCategory::Elementwise,
              {tensor(dtype, {rows, run_.hidden}), tensor(dtype, {rows, run_.hidden})}, {tensor(dtype, {rows, run_.hidden})}));
      trace_.range_end(RangeKind::Layer, layer, host_++);
    }
    emit(op(next_id_, "rmsnorm", "norm", OpCategory::Norm, {tensor(dtype, {rows, run_.hidden}), tensor(dtype, {run_.hidden})},
            {tensor(dtype, {rows, run_.hidden})}));
    matmul(run_.vocab, run_.hidden, "lm_head");
    emit(op(next_id_, "argmax", "greedy", OpCategory::Sampling, {tensor(dtype, {1, run_.vocab}), tensor(DType::I32, {1})},
            {tensor(DType::I32, {1, 64})}));
  }

  SyntheticRun run_;
  Roofs roofs_;
  Trace trace_;
  OpId next_id_ = 1;
  int64_t host_ = 1'000'000;
  int64_t device_ = 1'000'000;
};

}  // namespace

Trace synthetic_run_trace(const SyntheticRun& run, const DeviceSpec& device) { return Generator(run, device).generate(); }

}  // namespace decodelab::testing
