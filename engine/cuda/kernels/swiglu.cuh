// swiglu: out = round(round(silu(gate)) * up), elementwise, as eager torch computes
// F.silu(gate) * up: silu's result is rounded to gate's dtype before the product.
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

void launch_swiglu(const KernelTensor& gate, const KernelTensor& up, const KernelTensor& out, cudaStream_t stream);

}  // namespace decodelab::cuda
