// Position vectors: one thread per entry, any element stride (a view may be strided).
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels/device_utils.cuh"
#include "engine/cuda/kernels/positions.cuh"

namespace decodelab::cuda {

namespace {

constexpr int kPositionsThreads = 256;

__global__ void fill_positions_kernel(int32_t* positions, int64_t count, int64_t stride, int start, int period) {
  const int64_t m = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (m < count) positions[m * stride] = start + static_cast<int32_t>(m % period);
}

__global__ void advance_positions_kernel(int32_t* positions, int64_t count, int64_t stride) {
  const int64_t m = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (m < count) positions[m * stride] += 1;
}

}  // namespace

void launch_fill_positions(int32_t* positions, int64_t count, int64_t stride, int start, int period,
                           cudaStream_t stream) {
  if (count == 0) return;
  fill_positions_kernel<<<blocks_for(count, kPositionsThreads, 1LL << 30), kPositionsThreads, 0, stream>>>(
      positions, count, stride, start, period);
  CHECK_LAUNCH();
}

void launch_advance_positions(int32_t* positions, int64_t count, int64_t stride, cudaStream_t stream) {
  if (count == 0) return;
  advance_positions_kernel<<<blocks_for(count, kPositionsThreads, 1LL << 30), kPositionsThreads, 0, stream>>>(
      positions, count, stride);
  CHECK_LAUNCH();
}

}  // namespace decodelab::cuda
