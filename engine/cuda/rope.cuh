// rope: rotate-half rotary embedding, in place on q and k (engine/backend.h: rope).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

// q [M, heads*head_dim], k [M, kv_heads*head_dim], positions [M] i32, inv_freq
// [head_dim/2] fp32. out[j] = x[j]·cos a − x[j+d/2]·sin a, out[j+d/2] = x[j+d/2]·cos a + x[j]·sin a,
// a = position · inv_freq[j], all in fp32, rounded once to the tensor's dtype.
void launch_rope(const KernelTensor& q, const KernelTensor& k, const KernelTensor& positions,
                 const KernelTensor& inv_freq, int head_dim, cudaStream_t stream);

}  // namespace decodelab::cuda
