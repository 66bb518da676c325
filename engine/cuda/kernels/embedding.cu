// embedding: one block per output row gathers one table row. When table and output share
// a dtype and every row start is 16-byte aligned the row moves as 16-byte words;
// otherwise element by element with conversion. A gather reads each row once, so the
// kernel is latency-bound at small batch no matter what: the lesson's gather_embed.
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels/device_utils.cuh"
#include "engine/cuda/kernels/embedding.cuh"

namespace decodelab::cuda {

namespace {

constexpr int kEmbeddingThreads = 256;

// The table row for output row m, or -1 when the id or position is out of range.
__device__ __forceinline__ int64_t table_row(const KernelTensor& tokens, const KernelTensor& positions,
                                             int rows_per_sequence, int64_t vocab, int64_t m) {
  const int64_t sequence = m / rows_per_sequence;
  const int32_t position = static_cast<const int32_t*>(positions.data)[m * positions.strides[0]];
  if (position < 0 || position >= tokens.shape[1] || sequence >= tokens.shape[0]) return -1;
  const int32_t token =
      static_cast<const int32_t*>(tokens.data)[sequence * tokens.strides[0] + position * tokens.strides[1]];
  return (token < 0 || token >= vocab) ? -1 : token;
}

__global__ void embedding_words_kernel(KernelTensor table, KernelTensor tokens, KernelTensor positions,
                                       int rows_per_sequence, KernelTensor out, int64_t words_per_row) {
  const int64_t m = blockIdx.x;
  const int64_t row = table_row(tokens, positions, rows_per_sequence, table.shape[0], m);
  const int64_t element = element_bytes(out.dtype);
  uint4* destination = reinterpret_cast<uint4*>(static_cast<char*>(out.data) + m * out.strides[0] * element);
  if (row < 0) {
    for (int64_t w = threadIdx.x; w < words_per_row; w += blockDim.x) destination[w] = make_uint4(0, 0, 0, 0);
    return;
  }
  const uint4* source =
      reinterpret_cast<const uint4*>(static_cast<const char*>(table.data) + row * table.strides[0] * element);
  for (int64_t w = threadIdx.x; w < words_per_row; w += blockDim.x) destination[w] = source[w];
}

__global__ void embedding_generic_kernel(KernelTensor table, KernelTensor tokens, KernelTensor positions,
                                         int rows_per_sequence, KernelTensor out) {
  const int64_t m = blockIdx.x;
  const int64_t hidden = out.shape[1];
  const int64_t row = table_row(tokens, positions, rows_per_sequence, table.shape[0], m);
  for (int64_t d = threadIdx.x; d < hidden; d += blockDim.x) {
    const float value = row < 0 ? 0.0f : load_any(table.data, table.dtype, row * table.strides[0] + d * table.strides[1]);
    store_any(out.data, out.dtype, m * out.strides[0] + d * out.strides[1], value);
  }
}

}  // namespace

void launch_embedding(const KernelTensor& table, const KernelTensor& tokens, const KernelTensor& positions,
                      int rows_per_sequence, const KernelTensor& out, cudaStream_t stream) {
  const int64_t rows = out.shape[0];
  const int64_t hidden = out.shape[1];
  if (rows == 0 || hidden == 0) return;
  const int64_t element = element_bytes(out.dtype);
  const bool words = table.dtype == out.dtype && table.strides[1] == 1 && out.strides[1] == 1 &&
                     aligned_to(table.data, 16) && aligned_to(out.data, 16) &&
                     (table.strides[0] * element) % 16 == 0 && (out.strides[0] * element) % 16 == 0 &&
                     (hidden * element) % 16 == 0;
  if (words) {
    embedding_words_kernel<<<static_cast<unsigned int>(rows), kEmbeddingThreads, 0, stream>>>(
        table, tokens, positions, rows_per_sequence, out, static_cast<int64_t>(hidden * element / 16));
  } else {
    embedding_generic_kernel<<<static_cast<unsigned int>(rows), kEmbeddingThreads, 0, stream>>>(
        table, tokens, positions, rows_per_sequence, out);
  }
  CHECK_LAUNCH();
}

}  // namespace decodelab::cuda
