// The cost model: FLOPs and minimal DRAM bytes of an op, declared from its description
// (shapes, dtypes, attention extent), never measured — like nvbench's declared throughput.
// "Minimal" means each tensor element the op must touch is read or written once:
// a strided source counts its logical size, caches count only the positions used.
//
// FLOP conventions (nominal, so that intensities are comparable across runs):
//   matmul      2·M·N·K                       x[M,K] · W[N,K]ᵀ
//   attention   4·head_dim·query_heads·query_key_pairs   (QKᵀ and PV; softmax not counted)
//   rmsnorm     4 per element (square-accumulate, scale, weight)
//   rope        3 per rotated element of q and k
//   swiglu      4 per output element (exp, add, divide, multiply; a transcendental counts one)
//   add         1 per element;  argmax 1 compare per logit
//   copy, cast, kv_store, embedding, memcpy, markers, positions: 0
// Non-obvious choice: the compute roof an op is held to is fp16/bf16 tensor only for a
// matmul whose two inputs are half precision; every other op (attention included: the
// engine's attention kernels do not use tensor cores) is held to the fp32 roof.
#pragma once

#include "engine/events/event_sink.h"
#include "profiling/device_spec.h"

namespace decodelab {

struct OpCost {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  Precision precision = Precision::Fp32;  // which compute roof applies

  double bytes() const { return bytes_read + bytes_written; }
  // FLOP per DRAM byte; 0 when the op moves no bytes.
  double intensity() const { return bytes() > 0 ? flops / bytes() : 0.0; }
};

OpCost op_cost(const OpDesc& op);

// Bytes of K and V an attention op must read: key positions × kv heads × head_dim × dtype, twice.
double attention_kv_bytes(const AttentionExtent& extent, DType cache_dtype);

// Logical bytes of a tensor view (elements × dtype size, whatever its strides).
double tensor_bytes(const TensorInfo& tensor);
int64_t tensor_elements(const TensorInfo& tensor);
// Elements over the last dimension: a matmul activation's M.
int64_t tensor_rows(const TensorInfo& tensor);
// The compute unit a dtype's arithmetic runs on (fp32 for every other dtype).
Precision dtype_precision(DType dtype);

}  // namespace decodelab
