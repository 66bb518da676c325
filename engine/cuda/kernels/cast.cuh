// cast: elementwise dtype conversion, same shape, any strides (engine/backend.h: cast).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

// out = x converted to out's dtype (fp32 <-> fp16/bf16/i32), rounded to nearest even.
void launch_cast(const KernelTensor& x, const KernelTensor& out, cudaStream_t stream);

}  // namespace decodelab::cuda
