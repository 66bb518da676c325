// What one top-level op of a torch.profiler trace is to the diagnosis, from what the
// profiler recorded and nothing else: its name (aten::linear, aten::matmul, aten::softmax,
// aten::contiguous, aten::to, ...), its inputs' shapes, dtypes and strides, and the ops that
// ran inside it (the aten::clone a reshape made, the aten::copy_ a cast made).
// Non-obvious choice: a matmul is a projection when one operand is a 2-D weight and
// attention when both operands are batched (rank >= 3) — the roles differ by shape, not
// by who called them — and a copy counts as a layout copy only when torch made it because
// the tensor was not contiguous: aten::contiguous (dispatched only then), a reshape that
// had to clone, or a clone whose recorded strides show a non-contiguous source. An in-place
// aten::copy_ into a buffer (a cache store) and aten::cat (a cache grown by concatenation)
// are not layout copies.
#pragma once

#include <cstdint>
#include <string>

#include "profiling/trace/torch_trace.h"

namespace decodelab {

enum class TorchRole {
  Other,
  Embedding,        // a: the table [vocab, hidden]; b: the token ids
  Projection,       // a: activations [..., in]; b: the weight; rows × in → out
  AttentionMatmul,  // a, b: batched operands (scores = q·Kᵀ, or output = probabilities·V)
  FusedAttention,   // scaled_dot_product_attention: a = q, b = K, c = V
  Norm,             // a layer/RMS norm, or a norm's statistic (rsqrt/sqrt of a [..., 1] tensor)
  Softmax,          // computed_type: what it computed in (the inner aten::_softmax's input)
  Cast,             // an fp32 <-> half conversion of a tensor: a = the source, computed_type = the result's
  LayoutCopy,       // a = the non-contiguous tensor copied
  Sampling,         // argmax / max / topk / sort / multinomial over the logits: a = the logits
};

struct TorchOp {
  int event = -1;
  TorchRole role = TorchRole::Other;
  const TorchInput* a = nullptr;
  const TorchInput* b = nullptr;
  const TorchInput* c = nullptr;
  int64_t in_features = 0, out_features = 0, rows = 0;  // projections
  std::string computed_type;                            // softmax, cast

  // "aten::linear (c10::BFloat16 [2, 1, 64], c10::BFloat16 [64, 64])"
  std::string describe(const TorchTrace& trace) const;
};

// The role of a host event that sits inside no other cpu_op.
TorchOp classify_torch_op(const TorchTrace& trace, int event);

// Inside an attention matmul: a copy torch.matmul made of `operand` (its reshape had to
// clone a view it could not flatten), or -1. Matched by element count and the two
// matrix axes, since the copy may be of the expanded, not yet flattened, operand.
int implicit_copy_of(const TorchTrace& trace, int matmul_event, const TorchInput& operand);

// The tensor with its last two axes swapped (Kᵀ as recorded → K).
TorchInput swap_last_axes(const TorchInput& tensor);
// Same element count and the same two last axes: one tensor seen before and after its
// leading axes were merged (or its heads expanded).
bool same_matrices(const TorchInput& a, const TorchInput& b);

}  // namespace decodelab
