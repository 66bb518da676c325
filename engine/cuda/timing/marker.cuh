// marker: a zero-work kernel whose device start time says when the stream reached it
// (used when device times come from CUPTI, which times kernels, not events).
#pragma once

#include <cuda_runtime_api.h>

namespace decodelab::cuda {

void launch_marker(cudaStream_t stream);

}  // namespace decodelab::cuda
