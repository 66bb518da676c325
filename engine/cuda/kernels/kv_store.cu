// kv_store: one thread per (row, kv head, d) writes one key and one value element. The
// reads of k_new/v_new are coalesced; the cache writes are coalesced when the cache is
// contiguous in head_dim, and scattered for a head_dim-strided (transposed) cache.
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels/device_utils.cuh"
#include "engine/cuda/kernels/kv_store.cuh"

namespace decodelab::cuda {

namespace {

constexpr int kKvStoreThreads = 256;

__device__ __forceinline__ int64_t cache_offset(const KernelTensor& cache, int64_t sequence, int64_t head,
                                                int64_t position, int64_t d) {
  return sequence * cache.strides[0] + head * cache.strides[1] + position * cache.strides[2] + d * cache.strides[3];
}

__global__ void kv_store_kernel(KernelTensor k_new, KernelTensor v_new, KernelTensor k_cache, KernelTensor v_cache,
                                KernelTensor positions, int rows_per_sequence, int64_t rows) {
  const int64_t kv_heads = k_cache.shape[1];
  const int64_t head_dim = k_cache.shape[3];
  const int64_t width = kv_heads * head_dim;
  const int64_t total = rows * width;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int64_t column = i % width;
    const int64_t m = i / width;
    const int64_t head = column / head_dim;
    const int64_t d = column % head_dim;
    const int64_t sequence = m / rows_per_sequence;
    const int32_t position = static_cast<const int32_t*>(positions.data)[m * positions.strides[0]];
    if (position < 0 || position >= k_cache.shape[2] || sequence >= k_cache.shape[0]) continue;
    const float key = load_any(k_new.data, k_new.dtype, m * k_new.strides[0] + column * k_new.strides[1]);
    const float value = load_any(v_new.data, v_new.dtype, m * v_new.strides[0] + column * v_new.strides[1]);
    store_any(k_cache.data, k_cache.dtype, cache_offset(k_cache, sequence, head, position, d), key);
    store_any(v_cache.data, v_cache.dtype, cache_offset(v_cache, sequence, head, position, d), value);
  }
}

}  // namespace

void launch_kv_store(const KernelTensor& k_new, const KernelTensor& v_new, const KernelTensor& k_cache,
                     const KernelTensor& v_cache, const KernelTensor& positions, int rows_per_sequence,
                     cudaStream_t stream) {
  const int64_t rows = k_new.shape[0];
  const int64_t total = rows * k_cache.shape[1] * k_cache.shape[3];
  if (total == 0) return;
  kv_store_kernel<<<blocks_for(total, kKvStoreThreads), kKvStoreThreads, 0, stream>>>(
      k_new, v_new, k_cache, v_cache, positions, rows_per_sequence, rows);
  CHECK_LAUNCH();
}

}  // namespace decodelab::cuda
