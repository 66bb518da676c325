// rope: rotate-half rotary embedding, in place on q and k (engine/backend.h: rope).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

// q [M, heads*head_dim], k [M, kv_heads*head_dim], positions [M] i32, inv_freq
// [head_dim/2] fp32; a = position · inv_freq[j] in fp32. As eager torch (and the CPU
// backend) compute it, cos a and sin a are rounded to the tensor's dtype, and so is
// every product and the sum (identity for fp32):
//   out[j]       = round(round(x[j]·c) + round(−x[j+d/2]·s))
//   out[j + d/2] = round(round(x[j+d/2]·c) + round(x[j]·s))
void launch_rope(const KernelTensor& q, const KernelTensor& k, const KernelTensor& positions,
                 const KernelTensor& inv_freq, int head_dim, cudaStream_t stream);

}  // namespace decodelab::cuda
