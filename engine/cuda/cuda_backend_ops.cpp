// The CUDA backend's ops: each checks its views on the host (a wrong shape is an
// exception with the op, the tensor and what was expected, never a kernel reading out
// of bounds), opens an OpScope (NVTX range + device timing) and calls the launchers.
// Device-side values (token ids, positions) cannot be checked here; the kernels skip
// what is out of range instead (see each launcher's header).
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "engine/base/op_checks.h"
#include "engine/cuda/kernels/add.cuh"
#include "engine/cuda/kernels/argmax.cuh"
#include "engine/cuda/kernels/attention.cuh"
#include "engine/cuda/kernels/cast.cuh"
#include "engine/cuda/kernels/copy.cuh"
#include "engine/cuda/cuda_backend_impl.h"
#include "engine/cuda/kernels/embedding.cuh"
#include "engine/cuda/kernels/kv_store.cuh"
#include "engine/cuda/kernels/positions.cuh"
#include "engine/cuda/kernels/rmsnorm.cuh"
#include "engine/cuda/kernels/rope.cuh"
#include "engine/cuda/kernels/swiglu.cuh"

namespace decodelab::cuda {

namespace {

constexpr int kAttentionScratchSlot = 8;  // matmul staging uses slots 0-2

// The engine's shared op checks (engine/base/op_checks.h), each message opening with "cuda".
constexpr OpChecks kChecks{"cuda"};

// A rank-1 vector as a one-row matrix; rank 2 unchanged.
KernelTensor as_rows(const Tensor& tensor) {
  KernelTensor view = KernelTensor::of(tensor);
  if (tensor.rank == 1) {
    view.rank = 2;
    view.shape[0] = 1;
    view.shape[1] = tensor.shape[0];
    view.strides[1] = tensor.strides[0];
    view.strides[0] = tensor.shape[0] * tensor.strides[0];
  }
  return view;
}

}  // namespace

void CudaBackend::embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions,
                            int rows_per_sequence, const Tensor& out, OpId id) {
  constexpr const char* op = "embedding";
  kChecks.rank(table, 2, op, "table");
  kChecks.rank(tokens, 2, op, "tokens");
  kChecks.rank(positions, 1, op, "positions");
  kChecks.rank(out, 2, op, "out");
  kChecks.floating(table, op, "table");
  kChecks.floating(out, op, "out");
  kChecks.dtype(tokens, DType::I32, op, "tokens");
  kChecks.dtype(positions, DType::I32, op, "positions");
  kChecks.require(out.shape[1] == table.shape[1], op, [&] {
    return describe_tensor("out", out) + " must have the table's width " + std::to_string(table.shape[1]);
  });
  kChecks.require(positions.shape[0] == out.shape[0], op,
                  [&] { return describe_tensor("positions", positions) + " must have one entry per out row"; });
  kChecks.sequences(out.shape[0], rows_per_sequence, tokens.shape[0], op);
  OpScope scope(*this, op, id);
  launch_embedding(KernelTensor::of(table), KernelTensor::of(tokens), KernelTensor::of(positions), rows_per_sequence,
                   KernelTensor::of(out), stream_);
  scope.finish();
}

void CudaBackend::rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, OpId id) {
  constexpr const char* op = "rmsnorm";
  kChecks.require((x.rank == 1 || x.rank == 2) && x.data, op,
                  [&] { return describe_tensor("x", x) + ": expected [rows, hidden] or [hidden]"; });
  kChecks.rank(weight, 1, op, "weight");
  kChecks.same_shape(x, out, op, "x", "out");
  kChecks.floating(x, op, "x");
  kChecks.floating(weight, op, "weight");
  kChecks.floating(out, op, "out");
  kChecks.require(weight.shape[0] == x.shape[x.rank - 1], op,
                  [&] { return describe_tensor("weight", weight) + " must match x's last dim"; });
  OpScope scope(*this, op, id);
  launch_rmsnorm(as_rows(x), KernelTensor::of(weight), eps, as_rows(out), stream_);
  scope.finish();
}

void CudaBackend::matmul(const Tensor& x, const Tensor& weight, const Tensor& out, OpId id) {
  constexpr const char* op = "matmul";
  kChecks.rank(x, 2, op, "x");
  kChecks.rank(weight, 2, op, "weight");
  kChecks.rank(out, 2, op, "out");
  kChecks.floating(x, op, "x");
  kChecks.floating(weight, op, "weight");
  kChecks.floating(out, op, "out");
  kChecks.require(x.shape[1] == weight.shape[1], op, [&] {
    return describe_tensor("x", x) + " and " + describe_tensor("weight", weight) + " disagree on K (weight is [N, K])";
  });
  kChecks.require(out.shape[0] == x.shape[0] && out.shape[1] == weight.shape[0], op, [&] {
    return describe_tensor("out", out) + ": expected [" + std::to_string(x.shape[0]) + "," +
           std::to_string(weight.shape[0]) + "]";
  });
  OpScope scope(*this, op, id);
  matmul_->run(KernelTensor::of(x), KernelTensor::of(weight), KernelTensor::of(out), matmul_scratch());
  scope.finish();
}

void CudaBackend::rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq,
                       int head_dim, OpId id) {
  constexpr const char* op = "rope";
  kChecks.rank(q, 2, op, "q");
  kChecks.rank(k, 2, op, "k");
  kChecks.rank(positions, 1, op, "positions");
  kChecks.rank(inv_freq, 1, op, "inv_freq");
  kChecks.floating(q, op, "q");
  kChecks.floating(k, op, "k");
  kChecks.dtype(positions, DType::I32, op, "positions");
  kChecks.require(inv_freq.dtype == DType::F32, op,
                  [&] { return describe_tensor("inv_freq", inv_freq) + ": expected fp32"; });
  kChecks.require(head_dim > 0 && head_dim % 2 == 0, op,
                  [&] { return "head_dim must be even and positive, got " + std::to_string(head_dim); });
  kChecks.require(q.shape[1] % head_dim == 0 && k.shape[1] % head_dim == 0, op, [&] {
    return describe_tensor("q", q) + " and " + describe_tensor("k", k) + " must be whole heads of " +
           std::to_string(head_dim);
  });
  kChecks.require(k.shape[0] == q.shape[0] && positions.shape[0] == q.shape[0], op,
                  [&] { return "q, k and positions must have the same number of rows"; });
  kChecks.require(inv_freq.shape[0] >= head_dim / 2, op,
                  [&] { return describe_tensor("inv_freq", inv_freq) + ": needs head_dim/2 entries"; });
  OpScope scope(*this, op, id);
  launch_rope(KernelTensor::of(q), KernelTensor::of(k), KernelTensor::of(positions), KernelTensor::of(inv_freq),
              head_dim, stream_);
  scope.finish();
}

void CudaBackend::kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
                           const Tensor& positions, int rows_per_sequence, OpId id) {
  constexpr const char* op = "kv_store";
  kChecks.rank(k_new, 2, op, "k_new");
  kChecks.rank(v_new, 2, op, "v_new");
  kChecks.rank(k_cache, 4, op, "k_cache");
  kChecks.rank(v_cache, 4, op, "v_cache");
  kChecks.rank(positions, 1, op, "positions");
  kChecks.dtype(positions, DType::I32, op, "positions");
  for (const Tensor* tensor : {&k_new, &v_new, &k_cache, &v_cache}) kChecks.floating(*tensor, op, "k/v");
  kChecks.same_shape(k_new, v_new, op, "k_new", "v_new");
  kChecks.same_shape(k_cache, v_cache, op, "k_cache", "v_cache");
  kChecks.require(k_new.shape[1] == k_cache.shape[1] * k_cache.shape[3], op, [&] {
    return describe_tensor("k_new", k_new) + " must be [rows, kv_heads*head_dim] of " +
           describe_tensor("k_cache", k_cache);
  });
  kChecks.require(positions.shape[0] == k_new.shape[0], op,
                  [&] { return describe_tensor("positions", positions) + " must have one entry per row"; });
  kChecks.sequences(k_new.shape[0], rows_per_sequence, k_cache.shape[0], op);
  OpScope scope(*this, op, id);
  launch_kv_store(KernelTensor::of(k_new), KernelTensor::of(v_new), KernelTensor::of(k_cache),
                  KernelTensor::of(v_cache), KernelTensor::of(positions), rows_per_sequence, stream_);
  scope.finish();
}

void CudaBackend::attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                            int rows_per_sequence, float scale, const Tensor& out, OpId id) {
  constexpr const char* op = "attention";
  kChecks.rank(q, 2, op, "q");
  kChecks.rank(k_cache, 4, op, "k_cache");
  kChecks.rank(v_cache, 4, op, "v_cache");
  kChecks.rank(positions, 1, op, "positions");
  kChecks.rank(out, 2, op, "out");
  kChecks.floating(q, op, "q");
  kChecks.floating(out, op, "out");
  kChecks.floating(k_cache, op, "k_cache");
  kChecks.dtype(positions, DType::I32, op, "positions");
  kChecks.same_shape(k_cache, v_cache, op, "k_cache", "v_cache");
  kChecks.require(k_cache.dtype == v_cache.dtype, op, [&] { return "k_cache and v_cache must share a dtype"; });
  kChecks.same_shape(q, out, op, "q", "out");
  const int64_t head_dim = k_cache.shape[3];
  const int64_t kv_heads = k_cache.shape[1];
  kChecks.require(head_dim >= 1 && head_dim <= kAttentionMaxHeadDim, op, [&] {
    return "head_dim " + std::to_string(head_dim) + " is outside 1.." + std::to_string(kAttentionMaxHeadDim);
  });
  kChecks.require(kv_heads >= 1 && q.shape[1] % (kv_heads * head_dim) == 0, op, [&] {
    return describe_tensor("q", q) + " must hold a whole number of query heads per KV head of " +
           describe_tensor("k_cache", k_cache);
  });
  kChecks.require(positions.shape[0] == q.shape[0], op,
                  [&] { return describe_tensor("positions", positions) + " must have one entry per q row"; });
  kChecks.sequences(q.shape[0], rows_per_sequence, k_cache.shape[0], op);
  kChecks.require(std::isfinite(scale), op, [&] { return "scale must be finite"; });

  const AttentionShape shape = attention_shape_of(q.shape[0], q.shape[1], k_cache.shape.data());
  const AttentionWorkspace::Call call = attention_workspace_.plan(shape, capturing_);
  if (capturing_ && !warned_smaller_plan_ && call.smaller_than_device_plan()) {
    warned_smaller_plan_ = true;  // reserve_attention() was not called for this shape
    std::fprintf(stderr,
                 "decodelab: a captured attention runs %d key splits instead of %d: its workspace was not "
                 "reserved before the capture (Backend::reserve_attention)\n",
                 call.plan.splits, call.device_plan.splits);
  }
  float* workspace = nullptr;
  if (call.floats > 0) workspace = static_cast<float*>(scratch(kAttentionScratchSlot, call.floats * sizeof(float)));
  OpScope scope(*this, op, id);
  launch_attention(KernelTensor::of(q), KernelTensor::of(k_cache), KernelTensor::of(v_cache),
                   KernelTensor::of(positions), rows_per_sequence, scale, KernelTensor::of(out), call.plan, workspace,
                   stream_);
  scope.finish();
}

void CudaBackend::reserve_attention(const AttentionBounds& bounds) {
  require_not_capturing("reserve_attention");
  const AttentionShape largest{bounds.max_rows, bounds.heads, bounds.kv_heads, bounds.head_dim, bounds.capacity};
  const size_t floats = attention_workspace_.reserve(largest);
  if (floats > 0) scratch(kAttentionScratchSlot, floats * sizeof(float));
}

void CudaBackend::swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, OpId id) {
  constexpr const char* op = "swiglu";
  kChecks.same_shape(gate, up, op, "gate", "up");
  kChecks.same_shape(gate, out, op, "gate", "out");
  for (const Tensor* tensor : {&gate, &up, &out}) kChecks.floating(*tensor, op, "gate/up/out");
  kChecks.require(gate.rank >= 1 && gate.rank <= 4, op, [&] { return "expected rank 1..4"; });
  OpScope scope(*this, op, id);
  launch_swiglu(KernelTensor::of(gate), KernelTensor::of(up), KernelTensor::of(out), stream_);
  scope.finish();
}

void CudaBackend::add(const Tensor& a, const Tensor& b, const Tensor& out, OpId id) {
  constexpr const char* op = "add";
  kChecks.same_shape(a, b, op, "a", "b");
  kChecks.same_shape(a, out, op, "a", "out");
  for (const Tensor* tensor : {&a, &b, &out}) kChecks.floating(*tensor, op, "a/b/out");
  kChecks.require(a.rank >= 1 && a.rank <= 4, op, [&] { return "expected rank 1..4"; });
  OpScope scope(*this, op, id);
  launch_add(KernelTensor::of(a), KernelTensor::of(b), KernelTensor::of(out), stream_);
  scope.finish();
}

void CudaBackend::argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions, OpId id) {
  constexpr const char* op = "argmax";
  kChecks.rank(logits, 2, op, "logits");
  kChecks.rank(tokens, 2, op, "tokens");
  kChecks.rank(positions, 1, op, "positions");
  kChecks.floating(logits, op, "logits");
  kChecks.dtype(tokens, DType::I32, op, "tokens");
  kChecks.dtype(positions, DType::I32, op, "positions");
  kChecks.require(positions.shape[0] == logits.shape[0] && tokens.shape[0] >= logits.shape[0], op, [&] {
    return "logits, tokens and positions need one row per sequence: " + describe_tensor("logits", logits) + ", " +
           describe_tensor("tokens", tokens) + ", " + describe_tensor("positions", positions);
  });
  OpScope scope(*this, op, id);
  launch_argmax(KernelTensor::of(logits), KernelTensor::of(tokens), KernelTensor::of(positions), argmax_workspace_,
                stream_);
  scope.finish();
}

void CudaBackend::cast(const Tensor& x, const Tensor& out, OpId id) {
  constexpr const char* op = "cast";
  kChecks.same_shape(x, out, op, "x", "out");
  kChecks.require(x.rank >= 1 && x.rank <= 4, op, [&] { return "expected rank 1..4"; });
  OpScope scope(*this, op, id);
  launch_cast(KernelTensor::of(x), KernelTensor::of(out), stream_);
  scope.finish();
}

void CudaBackend::copy(const Tensor& src, const Tensor& out, OpId id) {
  constexpr const char* op = "copy";
  kChecks.same_shape(src, out, op, "src", "out");
  kChecks.require(src.dtype == out.dtype, op, [&] {
    return describe_tensor("src", src) + " and " + describe_tensor("out", out) + " must share a dtype";
  });
  kChecks.require(src.rank >= 1 && src.rank <= 4, op, [&] { return "expected rank 1..4"; });
  OpScope scope(*this, op, id);
  launch_copy(KernelTensor::of(src), KernelTensor::of(out), stream_);
  scope.finish();
}

void CudaBackend::fill_positions(const Tensor& out, int start, int period, OpId id) {
  constexpr const char* op = "fill_positions";
  kChecks.rank(out, 1, op, "out");
  kChecks.dtype(out, DType::I32, op, "out");
  kChecks.require(period >= 1, op, [&] { return "period must be >= 1, got " + std::to_string(period); });
  OpScope scope(*this, op, id);
  launch_fill_positions(out.as<int32_t>(), out.shape[0], out.strides[0], start, period, stream_);
  scope.finish();
}

void CudaBackend::advance_positions(const Tensor& positions, OpId id) {
  constexpr const char* op = "advance_positions";
  kChecks.rank(positions, 1, op, "positions");
  kChecks.dtype(positions, DType::I32, op, "positions");
  OpScope scope(*this, op, id);
  launch_advance_positions(positions.as<int32_t>(), positions.shape[0], positions.strides[0], stream_);
  scope.finish();
}

}  // namespace decodelab::cuda
