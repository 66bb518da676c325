// kv_store: write this step's keys and values into the caches (engine/backend.h).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

// k_new, v_new [M, kv_heads*head_dim]; caches [sequences, kv_heads, positions, head_dim]
// with any strides; row m goes to sequence m / rows_per_sequence at positions[m]. A
// position outside the cache is skipped (a kernel cannot throw; the host validated shapes).
void launch_kv_store(const KernelTensor& k_new, const KernelTensor& v_new, const KernelTensor& k_cache,
                     const KernelTensor& v_cache, const KernelTensor& positions, int rows_per_sequence,
                     cudaStream_t stream);

}  // namespace decodelab::cuda
