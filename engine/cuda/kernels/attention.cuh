// attention: causal grouped-query attention over the KV cache, for decode (one query
// row per sequence) and prefill (many rows per sequence) alike (engine/backend.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "engine/cuda/host/attention_plan.h"
#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

// q, out [M, heads*head_dim]; caches [sequences, kv_heads, capacity, head_dim], any
// strides (a head_dim-strided view is read correctly, uncoalesced); positions [M] i32.
// workspace: attention_workspace_floats(shape, plan) floats (unused when plan.splits == 1).
void launch_attention(const KernelTensor& q, const KernelTensor& k_cache, const KernelTensor& v_cache,
                      const KernelTensor& positions, int rows_per_sequence, float scale, const KernelTensor& out,
                      const AttentionPlan& plan, float* workspace, cudaStream_t stream);

}  // namespace decodelab::cuda
