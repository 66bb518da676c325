// argmax: one block per sequence scans its logits row; each thread keeps its best
// (value, index), then a warp-shuffle and a shared-memory round reduce them. Ties keep
// the smaller index at every step, so the result is the first maximum, as on the CPU.
#include <cfloat>

#include "engine/cuda/argmax.cuh"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device_utils.cuh"

namespace decodelab::cuda {

namespace {

constexpr int kArgmaxThreads = 1024;

// Whether (value, index) beats (best, best_index): larger, or equal with a smaller index;
// NaN beats every number.
__device__ __forceinline__ bool beats(float value, int64_t index, float best, int64_t best_index) {
  const bool value_nan = value != value;
  const bool best_nan = best != best;
  if (value_nan || best_nan) return value_nan && (!best_nan || index < best_index);
  return value > best || (value == best && index < best_index);
}

template <typename T>
__global__ void argmax_kernel(const T* logits, int64_t row_stride, int64_t element_stride, int64_t vocab,
                              KernelTensor tokens, KernelTensor positions) {
  __shared__ float shared_values[32];
  __shared__ int64_t shared_indices[32];
  const int64_t sequence = blockIdx.x;
  const T* row = logits + sequence * row_stride;

  float best = -INFINITY;
  int64_t best_index = INT64_MAX;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float value = to_float(row[i * element_stride]);
    if (beats(value, i, best, best_index)) {
      best = value;
      best_index = i;
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, best, offset);
    const int64_t other_index = __shfl_xor_sync(0xffffffffu, best_index, offset);
    if (beats(other, other_index, best, best_index)) {
      best = other;
      best_index = other_index;
    }
  }
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  if (lane == 0) {
    shared_values[warp] = best;
    shared_indices[warp] = best_index;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  const int warps = (blockDim.x + 31) / 32;
  for (int w = 1; w < warps; ++w) {
    if (beats(shared_values[w], shared_indices[w], best, best_index)) {
      best = shared_values[w];
      best_index = shared_indices[w];
    }
  }
  const int32_t position = static_cast<const int32_t*>(positions.data)[sequence * positions.strides[0]];
  const int64_t next = static_cast<int64_t>(position) + 1;
  if (next < 0 || next >= tokens.shape[1] || best_index >= vocab) return;
  static_cast<int32_t*>(tokens.data)[sequence * tokens.strides[0] + next * tokens.strides[1]] =
      static_cast<int32_t>(best_index);
}

}  // namespace

void launch_argmax(const KernelTensor& logits, const KernelTensor& tokens, const KernelTensor& positions,
                   cudaStream_t stream) {
  const int64_t sequences = logits.shape[0];
  const int64_t vocab = logits.shape[1];
  if (sequences == 0 || vocab == 0) return;
  dispatch_float_dtype(logits.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    argmax_kernel<T><<<static_cast<unsigned int>(sequences), kArgmaxThreads, 0, stream>>>(
        static_cast<const T*>(logits.data), logits.strides[0], logits.strides[1], vocab, tokens, positions);
  });
  CHECK_LAUNCH();
}

}  // namespace decodelab::cuda
