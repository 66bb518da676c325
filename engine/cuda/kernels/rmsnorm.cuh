// rmsnorm: Llama RMSNorm, out = weight * round(x / sqrt(mean(x²) + eps)), statistics in
// fp32; the normalised value is rounded to x's dtype before the weight multiplies it
// (transformers casts back to the input dtype first), the product to out's dtype.
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

// x, out [rows, hidden] (any row stride); weight [hidden].
void launch_rmsnorm(const KernelTensor& x, const KernelTensor& weight, float eps, const KernelTensor& out,
                    cudaStream_t stream);

}  // namespace decodelab::cuda
