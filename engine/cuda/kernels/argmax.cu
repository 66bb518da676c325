// argmax: each thread keeps its best (value, index) over its share of a row, then a
// warp-shuffle and a shared-memory round reduce them. Many rows: one block per row. Few
// rows (a batch-1 decode step): each row is split into chunks (host/argmax_plan.h), one
// block each, and a one-warp kernel reduces the chunks' partials from a workspace the
// backend allocates once. Ties keep the smaller index at every step, so the result is the
// first maximum, as on the CPU.
#include <cfloat>

#include "engine/cuda/kernels/argmax.cuh"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels/device_utils.cuh"

namespace decodelab::cuda {

namespace {

constexpr int kArgmaxThreads = 1024;
constexpr int kArgmaxChunkThreads = 256;  // a chunk of >= 2048 logits: 8 or more per thread

// Whether (value, index) beats (best, best_index): larger, or equal with a smaller index;
// NaN beats every number.
__device__ __forceinline__ bool beats(float value, int64_t index, float best, int64_t best_index) {
  const bool value_nan = value != value;
  const bool best_nan = best != best;
  if (value_nan || best_nan) return value_nan && (!best_nan || index < best_index);
  return value > best || (value == best && index < best_index);
}

// The block's best (value, index) over what each thread found, in thread 0.
__device__ __forceinline__ void block_best(float& best, int64_t& best_index) {
  __shared__ float shared_values[32];
  __shared__ int64_t shared_indices[32];
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
}

// Each thread's best over [begin, end) of one row.
template <typename T>
__device__ __forceinline__ void thread_best(const T* row, int64_t element_stride, int64_t begin, int64_t end,
                                            float& best, int64_t& best_index) {
  best = -INFINITY;
  best_index = INT64_MAX;
#pragma unroll 4
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float value = to_float(row[i * element_stride]);
    if (beats(value, i, best, best_index)) {
      best = value;
      best_index = i;
    }
  }
}

__device__ __forceinline__ void write_token(int64_t sequence, int64_t best_index, int64_t vocab, KernelTensor tokens,
                                            KernelTensor positions) {
  const int32_t position = static_cast<const int32_t*>(positions.data)[sequence * positions.strides[0]];
  const int64_t next = static_cast<int64_t>(position) + 1;
  if (next < 0 || next >= tokens.shape[1] || best_index >= vocab) return;
  static_cast<int32_t*>(tokens.data)[sequence * tokens.strides[0] + next * tokens.strides[1]] =
      static_cast<int32_t>(best_index);
}

// One block per row: enough blocks when there are many rows.
template <typename T>
__global__ void argmax_kernel(const T* logits, int64_t row_stride, int64_t element_stride, int64_t vocab,
                              KernelTensor tokens, KernelTensor positions) {
  const int64_t sequence = blockIdx.x;
  float best;
  int64_t best_index;
  thread_best(logits + sequence * row_stride, element_stride, 0, vocab, best, best_index);
  block_best(best, best_index);
  if (threadIdx.x == 0) write_token(sequence, best_index, vocab, tokens, positions);
}

// Few rows: block (chunk, row) writes its chunk's best to the partials...
template <typename T>
__global__ void argmax_chunk_kernel(const T* logits, int64_t row_stride, int64_t element_stride, int64_t vocab,
                                    int64_t chunk_length, float* partial_values, int64_t* partial_indices) {
  const int64_t sequence = blockIdx.y;
  const int64_t begin = blockIdx.x * chunk_length;
  const int64_t end = begin + chunk_length < vocab ? begin + chunk_length : vocab;
  float best;
  int64_t best_index;
  thread_best(logits + sequence * row_stride, element_stride, begin, end, best, best_index);
  block_best(best, best_index);
  if (threadIdx.x == 0) {
    partial_values[sequence * gridDim.x + blockIdx.x] = best;
    partial_indices[sequence * gridDim.x + blockIdx.x] = best_index;
  }
}

// ... and one warp per row reduces them (chunks <= 64: two per lane at most).
__global__ void argmax_combine_kernel(const float* partial_values, const int64_t* partial_indices, int chunks,
                                      int64_t vocab, KernelTensor tokens, KernelTensor positions) {
  const int64_t sequence = blockIdx.x;
  float best = -INFINITY;
  int64_t best_index = INT64_MAX;
  for (int chunk = threadIdx.x; chunk < chunks; chunk += blockDim.x) {
    const float value = partial_values[sequence * chunks + chunk];
    const int64_t index = partial_indices[sequence * chunks + chunk];
    if (beats(value, index, best, best_index)) {
      best = value;
      best_index = index;
    }
  }
  block_best(best, best_index);
  if (threadIdx.x == 0) write_token(sequence, best_index, vocab, tokens, positions);
}

}  // namespace

void launch_argmax(const KernelTensor& logits, const KernelTensor& tokens, const KernelTensor& positions,
                   void* workspace, cudaStream_t stream) {
  const int64_t sequences = logits.shape[0];
  const int64_t vocab = logits.shape[1];
  if (sequences == 0 || vocab == 0) return;
  const ArgmaxPlan plan = plan_argmax(sequences, vocab);
  dispatch_float_dtype(logits.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = static_cast<const T*>(logits.data);
    if (plan.chunks <= 1 || workspace == nullptr) {
      argmax_kernel<T><<<static_cast<unsigned int>(sequences), kArgmaxThreads, 0, stream>>>(
          data, logits.strides[0], logits.strides[1], vocab, tokens, positions);
      return;
    }
    auto* partial_values = static_cast<float*>(workspace);
    auto* partial_indices = reinterpret_cast<int64_t*>(
        static_cast<char*>(workspace) + static_cast<size_t>(kArgmaxSplitMaxRows) * kArgmaxMaxChunks * sizeof(float));
    const dim3 grid(static_cast<unsigned int>(plan.chunks), static_cast<unsigned int>(sequences));
    argmax_chunk_kernel<T><<<grid, kArgmaxChunkThreads, 0, stream>>>(data, logits.strides[0], logits.strides[1], vocab,
                                                                     plan.chunk_length, partial_values, partial_indices);
    CHECK_LAUNCH();
    argmax_combine_kernel<<<static_cast<unsigned int>(sequences), 32, 0, stream>>>(
        partial_values, partial_indices, plan.chunks, vocab, tokens, positions);
  });
  CHECK_LAUNCH();
}

}  // namespace decodelab::cuda
