// rope: one thread per rotated pair (row, head, j < head_dim/2), q's heads then k's;
// the rounding of every intermediate follows eager torch (rope.cuh).
// sincosf, not __sincosf: angles reach thousands of radians at long positions, where
// the fast intrinsic's range reduction loses digits the CPU backend keeps.
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels/device_utils.cuh"
#include "engine/cuda/kernels/rope.cuh"

namespace decodelab::cuda {

namespace {

constexpr int kRopeThreads = 256;

__device__ __forceinline__ void rotate_pair(const KernelTensor& t, int64_t row, int64_t head, int64_t j, int half,
                                            float cosine, float sine) {
  const DType dtype = t.dtype;
  const int64_t base = row * t.strides[0] + head * 2 * half * t.strides[1];
  const int64_t first = base + j * t.strides[1];
  const int64_t second = base + (j + half) * t.strides[1];
  const float x1 = load_any(t.data, dtype, first);
  const float x2 = load_any(t.data, dtype, second);
  const float c = round_any(dtype, cosine);
  const float s = round_any(dtype, sine);
  store_any(t.data, dtype, first, round_any(dtype, x1 * c) + round_any(dtype, -x2 * s));
  store_any(t.data, dtype, second, round_any(dtype, x2 * c) + round_any(dtype, x1 * s));
}

__global__ void rope_kernel(KernelTensor q, KernelTensor k, KernelTensor positions, KernelTensor inv_freq,
                            int half, int64_t q_heads, int64_t k_heads, int64_t rows) {
  const int64_t heads = q_heads + k_heads;
  const int64_t total = rows * heads * half;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t j = i % half;
    const int64_t head = (i / half) % heads;
    const int64_t row = i / (half * heads);
    const int32_t position = static_cast<const int32_t*>(positions.data)[row * positions.strides[0]];
    const float angle = static_cast<float>(position) * static_cast<const float*>(inv_freq.data)[j * inv_freq.strides[0]];
    float sine, cosine;
    sincosf(angle, &sine, &cosine);
    if (head < q_heads) {
      rotate_pair(q, row, head, j, half, cosine, sine);
    } else {
      rotate_pair(k, row, head - q_heads, j, half, cosine, sine);
    }
  }
}

}  // namespace

void launch_rope(const KernelTensor& q, const KernelTensor& k, const KernelTensor& positions,
                 const KernelTensor& inv_freq, int head_dim, cudaStream_t stream) {
  const int half = head_dim / 2;
  const int64_t rows = q.shape[0];
  const int64_t q_heads = q.shape[1] / head_dim;
  const int64_t k_heads = k.shape[1] / head_dim;
  const int64_t total = rows * (q_heads + k_heads) * half;
  if (total == 0) return;
  rope_kernel<<<blocks_for(total, kRopeThreads), kRopeThreads, 0, stream>>>(q, k, positions, inv_freq, half, q_heads,
                                                                    k_heads, rows);
  CHECK_LAUNCH();
}

}  // namespace decodelab::cuda
