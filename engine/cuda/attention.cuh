// attention: causal grouped-query attention over the KV cache, for decode (one query
// row per sequence) and prefill (many rows per sequence) alike (engine/backend.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

struct AttentionShape {
  int64_t rows = 0;       // query rows M
  int heads = 0;          // query heads
  int kv_heads = 0;
  int head_dim = 0;
  int64_t capacity = 0;   // cached positions per sequence (the cache's third dim)
};

constexpr int kAttentionMaxHeadDim = 256;

// The split of each row's keys into independent blocks (FlashDecoding): enough blocks
// to fill the device, each at least 64 positions long, at most 128 splits. Planned from
// the cache capacity, not the current length (only the device knows positions), so one
// plan serves every step of a captured graph; splits past the length exit at once.
struct AttentionPlan {
  int splits = 1;
  int64_t split_length = 0;
};
AttentionPlan plan_attention(const AttentionShape& shape, int multiprocessors);
// fp32 workspace (floats) a plan needs: partial outputs, maxima and sums per split.
size_t attention_workspace_floats(const AttentionShape& shape, const AttentionPlan& plan);
// The largest plan no larger than `plan` whose workspace fits in `available_floats`.
AttentionPlan fit_attention_plan(const AttentionShape& shape, AttentionPlan plan, size_t available_floats);

// q, out [M, heads*head_dim]; caches [sequences, kv_heads, capacity, head_dim], any
// strides (a head_dim-strided view is read correctly, uncoalesced); positions [M] i32.
// workspace: attention_workspace_floats(shape, plan) floats (unused when plan.splits == 1).
void launch_attention(const KernelTensor& q, const KernelTensor& k_cache, const KernelTensor& v_cache,
                      const KernelTensor& positions, int rows_per_sequence, float scale, const KernelTensor& out,
                      const AttentionPlan& plan, float* workspace, cudaStream_t stream);

}  // namespace decodelab::cuda
