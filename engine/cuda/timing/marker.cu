// marker: one block of one thread that does nothing; CUPTI records its start and end.
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/timing/marker.cuh"

namespace decodelab::cuda {

namespace {
__global__ void marker_kernel() {}
}  // namespace

void launch_marker(cudaStream_t stream) {
  marker_kernel<<<1, 1, 0, stream>>>();
  CHECK_LAUNCH();
}

}  // namespace decodelab::cuda
