// add: out = a + b elementwise, any strides and dtypes; out may alias a (residual adds).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

void launch_add(const KernelTensor& a, const KernelTensor& b, const KernelTensor& out, cudaStream_t stream);

}  // namespace decodelab::cuda
