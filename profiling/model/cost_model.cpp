// Declared FLOPs and bytes per op. Ops are recognised by name (the engine's op names);
// an unknown name falls back to its category's rule: read every input, write every output.
#include "profiling/model/cost_model.h"

#include <cstring>

namespace decodelab {

int64_t tensor_elements(const TensorInfo& tensor) { return tensor.numel(); }

double tensor_bytes(const TensorInfo& tensor) {
  return static_cast<double>(tensor_elements(tensor)) * static_cast<double>(dtype_size(tensor.dtype));
}

double attention_kv_bytes(const AttentionExtent& extent, DType cache_dtype) {
  return 2.0 * static_cast<double>(extent.key_positions_read) * extent.kv_heads * extent.head_dim *
         static_cast<double>(dtype_size(cache_dtype));
}

namespace {

bool named(const OpDesc& op, const char* name) { return std::strcmp(op.name, name) == 0; }

double sum_bytes(const std::vector<TensorInfo>& tensors) {
  double total = 0;
  for (const TensorInfo& tensor : tensors) total += tensor_bytes(tensor);
  return total;
}

const TensorInfo* input(const OpDesc& op, size_t index) {
  return index < op.inputs.size() ? &op.inputs[index] : nullptr;
}
const TensorInfo* output(const OpDesc& op, size_t index) {
  return index < op.outputs.size() ? &op.outputs[index] : nullptr;
}

int64_t last_dim(const TensorInfo& tensor) { return tensor.rank > 0 ? tensor.shape[static_cast<size_t>(tensor.rank - 1)] : 0; }

Precision matmul_precision(DType a, DType b) {
  return a == b ? dtype_precision(a) : Precision::Fp32;
}

OpCost matmul_cost(const OpDesc& op) {
  OpCost cost;
  cost.bytes_read = sum_bytes(op.inputs);
  cost.bytes_written = sum_bytes(op.outputs);
  const TensorInfo* x = input(op, 0);
  const TensorInfo* weight = input(op, 1);
  if (!x || !weight) return cost;
  const double k = static_cast<double>(last_dim(*x));
  const double m = static_cast<double>(tensor_rows(*x));
  const double n = static_cast<double>(tensor_rows(*weight));
  cost.flops = 2.0 * m * n * k;
  cost.precision = matmul_precision(x->dtype, weight->dtype);
  return cost;
}

OpCost attention_cost(const OpDesc& op) {
  OpCost cost;
  const AttentionExtent& extent = op.attention;
  cost.flops = 4.0 * extent.head_dim * extent.query_heads * static_cast<double>(extent.query_key_pairs);
  const TensorInfo* q = input(op, 0);
  const TensorInfo* k_cache = input(op, 1);
  const DType cache_dtype = k_cache ? k_cache->dtype : (q ? q->dtype : DType::F32);
  cost.bytes_read = attention_kv_bytes(extent, cache_dtype) + (q ? tensor_bytes(*q) : 0.0);
  cost.bytes_written = sum_bytes(op.outputs);
  return cost;
}

// New keys and values go into the cache: read them once, write as many cache elements.
OpCost kv_store_cost(const OpDesc& op) {
  OpCost cost;
  cost.bytes_read = sum_bytes(op.inputs);
  const TensorInfo* cache = output(op, 0);
  const DType cache_dtype = cache ? cache->dtype : DType::F32;
  for (size_t i = 0; i < op.inputs.size() && i < 2; ++i) {
    cost.bytes_written += static_cast<double>(tensor_elements(op.inputs[i])) * static_cast<double>(dtype_size(cache_dtype));
  }
  return cost;
}

// Gathers one table row per output row; reads one token id per row (not the history).
OpCost embedding_cost(const OpDesc& op) {
  OpCost cost;
  const TensorInfo* table = input(op, 0);
  const TensorInfo* positions = input(op, 2);
  const TensorInfo* out = output(op, 0);
  if (!table || !out) return cost;
  const double rows = static_cast<double>(tensor_rows(*out));
  cost.bytes_read = static_cast<double>(tensor_elements(*out)) * static_cast<double>(dtype_size(table->dtype)) +
                    rows * sizeof(int32_t) + (positions ? tensor_bytes(*positions) : 0.0);
  cost.bytes_written = tensor_bytes(*out);
  return cost;
}

// Reads the logits, writes one token id per logits row into the history.
OpCost argmax_cost(const OpDesc& op) {
  OpCost cost;
  const TensorInfo* logits = input(op, 0);
  if (!logits) return cost;
  cost.flops = static_cast<double>(tensor_elements(*logits));
  cost.bytes_read = sum_bytes(op.inputs);
  cost.bytes_written = static_cast<double>(tensor_rows(*logits)) * sizeof(int32_t);
  return cost;
}

OpCost reads_and_writes(const OpDesc& op, double flops_per_output_element) {
  OpCost cost;
  cost.bytes_read = sum_bytes(op.inputs);
  cost.bytes_written = sum_bytes(op.outputs);
  double elements = 0;
  for (const TensorInfo& out : op.outputs) elements += static_cast<double>(tensor_elements(out));
  cost.flops = flops_per_output_element * elements;
  return cost;
}

}  // namespace

OpCost op_cost(const OpDesc& op) {
  if (named(op, "matmul")) return matmul_cost(op);
  if (named(op, "attention")) return attention_cost(op);
  if (named(op, "kv_store")) return kv_store_cost(op);
  if (named(op, "embedding")) return embedding_cost(op);
  if (named(op, "argmax")) return argmax_cost(op);
  if (named(op, "rmsnorm")) return reads_and_writes(op, 4.0);
  if (named(op, "rope")) return reads_and_writes(op, 3.0);  // outputs are q and k
  if (named(op, "swiglu")) return reads_and_writes(op, 4.0);
  if (named(op, "add")) return reads_and_writes(op, 1.0);
  switch (op.category) {
    case OpCategory::Matmul: return matmul_cost(op);
    case OpCategory::Attention: return attention_cost(op);
    case OpCategory::Marker: return OpCost{};
    case OpCategory::Norm: return reads_and_writes(op, 4.0);
    case OpCategory::Elementwise: return reads_and_writes(op, 1.0);
    default: return reads_and_writes(op, 0.0);  // copy, cast, memcpy, positions, ...
  }
}

int64_t tensor_rows(const TensorInfo& tensor) {
  const int64_t width = last_dim(tensor);
  return width > 0 ? tensor_elements(tensor) / width : 0;
}

Precision dtype_precision(DType dtype) {
  switch (dtype) {
    case DType::F16: return Precision::Fp16;
    case DType::BF16: return Precision::Bf16;
    default: return Precision::Fp32;
  }
}

}  // namespace decodelab
