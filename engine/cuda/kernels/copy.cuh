// copy: out = src for any strided src and out of the same shape and dtype (rank <= 4),
// bit-exact for every dtype including i32: the transpose copies (.contiguous()).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

void launch_copy(const KernelTensor& src, const KernelTensor& out, cudaStream_t stream);

}  // namespace decodelab::cuda
