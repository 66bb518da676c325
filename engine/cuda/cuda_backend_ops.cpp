// The CUDA backend's ops: each checks its views on the host (a wrong shape is an
// exception with the op, the tensor and what was expected, never a kernel reading out
// of bounds), opens an OpScope (NVTX range + device timing) and calls the launchers.
// Device-side values (token ids, positions) cannot be checked here; the kernels skip
// what is out of range instead (see each launcher's header).
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

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

std::string describe(const char* name, const Tensor& tensor) {
  // Spelled out rather than Tensor::shape_string(), which trips GCC 12's -Wrestrict false positive.
  std::string text = name;
  text += " [";
  for (int axis = 0; axis < tensor.rank; ++axis) {
    if (axis > 0) text += ",";
    text += std::to_string(tensor.shape[axis]);
  }
  text += "] ";
  text += dtype_name(tensor.dtype);
  return text;
}

void expect(bool condition, const char* op, const std::string& problem) {
  if (!condition) throw std::invalid_argument(std::string("cuda ") + op + ": " + problem);
}

void expect_rank(const Tensor& tensor, int rank, const char* op, const char* name) {
  expect(tensor.rank == rank && tensor.data != nullptr, op,
         describe(name, tensor) + ": expected a rank-" + std::to_string(rank) + " tensor with data");
}

void expect_floating(const Tensor& tensor, const char* op, const char* name) {
  expect(tensor.dtype != DType::I32, op, describe(name, tensor) + ": expected fp32, fp16 or bf16");
}

void expect_int32(const Tensor& tensor, const char* op, const char* name) {
  expect(tensor.dtype == DType::I32, op, describe(name, tensor) + ": expected i32");
}

void expect_same_shape(const Tensor& a, const Tensor& b, const char* op, const char* a_name, const char* b_name) {
  bool same = a.rank == b.rank;
  for (int axis = 0; same && axis < a.rank; ++axis) same = a.shape[axis] == b.shape[axis];
  expect(same, op, describe(a_name, a) + " and " + describe(b_name, b) + " must have the same shape");
}

// Rows of sequences: `rows` rows, rows_per_sequence to a sequence, at most `sequences`.
void expect_sequences(int64_t rows, int rows_per_sequence, int64_t sequences, const char* op) {
  expect(rows_per_sequence >= 1, op, "rows_per_sequence must be >= 1, got " + std::to_string(rows_per_sequence));
  const int64_t needed = (rows + rows_per_sequence - 1) / rows_per_sequence;
  expect(needed <= sequences, op,
         std::to_string(rows) + " rows at " + std::to_string(rows_per_sequence) + " per sequence need " +
             std::to_string(needed) + " sequences, the cache/history has " + std::to_string(sequences));
}

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
  expect_rank(table, 2, op, "table");
  expect_rank(tokens, 2, op, "tokens");
  expect_rank(positions, 1, op, "positions");
  expect_rank(out, 2, op, "out");
  expect_floating(table, op, "table");
  expect_floating(out, op, "out");
  expect_int32(tokens, op, "tokens");
  expect_int32(positions, op, "positions");
  expect(out.shape[1] == table.shape[1], op, describe("out", out) + " must have the table's width " +
                                                 std::to_string(table.shape[1]));
  expect(positions.shape[0] == out.shape[0], op, describe("positions", positions) + " must have one entry per out row");
  expect_sequences(out.shape[0], rows_per_sequence, tokens.shape[0], op);
  OpScope scope(*this, op, id);
  launch_embedding(KernelTensor::of(table), KernelTensor::of(tokens), KernelTensor::of(positions), rows_per_sequence,
                   KernelTensor::of(out), stream_);
  scope.finish();
}

void CudaBackend::rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out, OpId id) {
  constexpr const char* op = "rmsnorm";
  expect((x.rank == 1 || x.rank == 2) && x.data, op, describe("x", x) + ": expected [rows, hidden] or [hidden]");
  expect_rank(weight, 1, op, "weight");
  expect_same_shape(x, out, op, "x", "out");
  expect_floating(x, op, "x");
  expect_floating(weight, op, "weight");
  expect_floating(out, op, "out");
  expect(weight.shape[0] == x.shape[x.rank - 1], op, describe("weight", weight) + " must match x's last dim");
  OpScope scope(*this, op, id);
  launch_rmsnorm(as_rows(x), KernelTensor::of(weight), eps, as_rows(out), stream_);
  scope.finish();
}

void CudaBackend::matmul(const Tensor& x, const Tensor& weight, const Tensor& out, OpId id) {
  constexpr const char* op = "matmul";
  expect_rank(x, 2, op, "x");
  expect_rank(weight, 2, op, "weight");
  expect_rank(out, 2, op, "out");
  expect_floating(x, op, "x");
  expect_floating(weight, op, "weight");
  expect_floating(out, op, "out");
  expect(x.shape[1] == weight.shape[1], op,
         describe("x", x) + " and " + describe("weight", weight) + " disagree on K (weight is [N, K])");
  expect(out.shape[0] == x.shape[0] && out.shape[1] == weight.shape[0], op,
         describe("out", out) + ": expected [" + std::to_string(x.shape[0]) + "," + std::to_string(weight.shape[0]) + "]");
  OpScope scope(*this, op, id);
  matmul_->run(KernelTensor::of(x), KernelTensor::of(weight), KernelTensor::of(out), matmul_scratch());
  scope.finish();
}

void CudaBackend::rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq,
                       int head_dim, OpId id) {
  constexpr const char* op = "rope";
  expect_rank(q, 2, op, "q");
  expect_rank(k, 2, op, "k");
  expect_rank(positions, 1, op, "positions");
  expect_rank(inv_freq, 1, op, "inv_freq");
  expect_floating(q, op, "q");
  expect_floating(k, op, "k");
  expect_int32(positions, op, "positions");
  expect(inv_freq.dtype == DType::F32, op, describe("inv_freq", inv_freq) + ": expected fp32");
  expect(head_dim > 0 && head_dim % 2 == 0, op, "head_dim must be even and positive, got " + std::to_string(head_dim));
  expect(q.shape[1] % head_dim == 0 && k.shape[1] % head_dim == 0, op,
         describe("q", q) + " and " + describe("k", k) + " must be whole heads of " + std::to_string(head_dim));
  expect(k.shape[0] == q.shape[0] && positions.shape[0] == q.shape[0], op,
         "q, k and positions must have the same number of rows");
  expect(inv_freq.shape[0] >= head_dim / 2, op, describe("inv_freq", inv_freq) + ": needs head_dim/2 entries");
  OpScope scope(*this, op, id);
  launch_rope(KernelTensor::of(q), KernelTensor::of(k), KernelTensor::of(positions), KernelTensor::of(inv_freq),
              head_dim, stream_);
  scope.finish();
}

void CudaBackend::kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
                           const Tensor& positions, int rows_per_sequence, OpId id) {
  constexpr const char* op = "kv_store";
  expect_rank(k_new, 2, op, "k_new");
  expect_rank(v_new, 2, op, "v_new");
  expect_rank(k_cache, 4, op, "k_cache");
  expect_rank(v_cache, 4, op, "v_cache");
  expect_rank(positions, 1, op, "positions");
  expect_int32(positions, op, "positions");
  for (const Tensor* tensor : {&k_new, &v_new, &k_cache, &v_cache}) expect_floating(*tensor, op, "k/v");
  expect_same_shape(k_new, v_new, op, "k_new", "v_new");
  expect_same_shape(k_cache, v_cache, op, "k_cache", "v_cache");
  expect(k_new.shape[1] == k_cache.shape[1] * k_cache.shape[3], op,
         describe("k_new", k_new) + " must be [rows, kv_heads*head_dim] of " + describe("k_cache", k_cache));
  expect(positions.shape[0] == k_new.shape[0], op, describe("positions", positions) + " must have one entry per row");
  expect_sequences(k_new.shape[0], rows_per_sequence, k_cache.shape[0], op);
  OpScope scope(*this, op, id);
  launch_kv_store(KernelTensor::of(k_new), KernelTensor::of(v_new), KernelTensor::of(k_cache),
                  KernelTensor::of(v_cache), KernelTensor::of(positions), rows_per_sequence, stream_);
  scope.finish();
}

void CudaBackend::attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions,
                            int rows_per_sequence, float scale, const Tensor& out, OpId id) {
  constexpr const char* op = "attention";
  expect_rank(q, 2, op, "q");
  expect_rank(k_cache, 4, op, "k_cache");
  expect_rank(v_cache, 4, op, "v_cache");
  expect_rank(positions, 1, op, "positions");
  expect_rank(out, 2, op, "out");
  expect_floating(q, op, "q");
  expect_floating(out, op, "out");
  expect_floating(k_cache, op, "k_cache");
  expect_int32(positions, op, "positions");
  expect_same_shape(k_cache, v_cache, op, "k_cache", "v_cache");
  expect(k_cache.dtype == v_cache.dtype, op, "k_cache and v_cache must share a dtype");
  expect_same_shape(q, out, op, "q", "out");
  const int64_t head_dim = k_cache.shape[3];
  const int64_t kv_heads = k_cache.shape[1];
  expect(head_dim >= 1 && head_dim <= kAttentionMaxHeadDim, op,
         "head_dim " + std::to_string(head_dim) + " is outside 1.." + std::to_string(kAttentionMaxHeadDim));
  expect(kv_heads >= 1 && q.shape[1] % (kv_heads * head_dim) == 0, op,
         describe("q", q) + " must hold a whole number of query heads per KV head of " + describe("k_cache", k_cache));
  expect(positions.shape[0] == q.shape[0], op, describe("positions", positions) + " must have one entry per q row");
  expect_sequences(q.shape[0], rows_per_sequence, k_cache.shape[0], op);
  expect(std::isfinite(scale), op, "scale must be finite");

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
  expect_same_shape(gate, up, op, "gate", "up");
  expect_same_shape(gate, out, op, "gate", "out");
  for (const Tensor* tensor : {&gate, &up, &out}) expect_floating(*tensor, op, "gate/up/out");
  expect(gate.rank >= 1 && gate.rank <= 4, op, "expected rank 1..4");
  OpScope scope(*this, op, id);
  launch_swiglu(KernelTensor::of(gate), KernelTensor::of(up), KernelTensor::of(out), stream_);
  scope.finish();
}

void CudaBackend::add(const Tensor& a, const Tensor& b, const Tensor& out, OpId id) {
  constexpr const char* op = "add";
  expect_same_shape(a, b, op, "a", "b");
  expect_same_shape(a, out, op, "a", "out");
  for (const Tensor* tensor : {&a, &b, &out}) expect_floating(*tensor, op, "a/b/out");
  expect(a.rank >= 1 && a.rank <= 4, op, "expected rank 1..4");
  OpScope scope(*this, op, id);
  launch_add(KernelTensor::of(a), KernelTensor::of(b), KernelTensor::of(out), stream_);
  scope.finish();
}

void CudaBackend::argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions, OpId id) {
  constexpr const char* op = "argmax";
  expect_rank(logits, 2, op, "logits");
  expect_rank(tokens, 2, op, "tokens");
  expect_rank(positions, 1, op, "positions");
  expect_floating(logits, op, "logits");
  expect_int32(tokens, op, "tokens");
  expect_int32(positions, op, "positions");
  expect(positions.shape[0] == logits.shape[0] && tokens.shape[0] >= logits.shape[0], op,
         "logits, tokens and positions need one row per sequence: " + describe("logits", logits) + ", " +
             describe("tokens", tokens) + ", " + describe("positions", positions));
  OpScope scope(*this, op, id);
  launch_argmax(KernelTensor::of(logits), KernelTensor::of(tokens), KernelTensor::of(positions), argmax_workspace_,
                stream_);
  scope.finish();
}

void CudaBackend::cast(const Tensor& x, const Tensor& out, OpId id) {
  constexpr const char* op = "cast";
  expect_same_shape(x, out, op, "x", "out");
  expect(x.rank >= 1 && x.rank <= 4, op, "expected rank 1..4");
  OpScope scope(*this, op, id);
  launch_cast(KernelTensor::of(x), KernelTensor::of(out), stream_);
  scope.finish();
}

void CudaBackend::copy(const Tensor& src, const Tensor& out, OpId id) {
  constexpr const char* op = "copy";
  expect_same_shape(src, out, op, "src", "out");
  expect(src.dtype == out.dtype, op, describe("src", src) + " and " + describe("out", out) + " must share a dtype");
  expect(src.rank >= 1 && src.rank <= 4, op, "expected rank 1..4");
  OpScope scope(*this, op, id);
  launch_copy(KernelTensor::of(src), KernelTensor::of(out), stream_);
  scope.finish();
}

void CudaBackend::fill_positions(const Tensor& out, int start, int period, OpId id) {
  constexpr const char* op = "fill_positions";
  expect_rank(out, 1, op, "out");
  expect_int32(out, op, "out");
  expect(period >= 1, op, "period must be >= 1, got " + std::to_string(period));
  OpScope scope(*this, op, id);
  launch_fill_positions(out.as<int32_t>(), out.shape[0], out.strides[0], start, period, stream_);
  scope.finish();
}

void CudaBackend::advance_positions(const Tensor& positions, OpId id) {
  constexpr const char* op = "advance_positions";
  expect_rank(positions, 1, op, "positions");
  expect_int32(positions, op, "positions");
  OpScope scope(*this, op, id);
  launch_advance_positions(positions.as<int32_t>(), positions.shape[0], positions.strides[0], stream_);
  scope.finish();
}

}  // namespace decodelab::cuda
