// copy: moves raw element bits (2 or 4 bytes), never converting. Dense-to-dense copies
// move 16-byte words when both ends are aligned; anything else takes the generic path,
// one thread per output element, so writes stay coalesced and strided reads are what
// they are (the non_contiguous lesson: a transposed read of the cache).
#include "engine/cuda/kernels/copy.cuh"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels/device_utils.cuh"
#include "engine/cuda/kernels/elementwise.cuh"

namespace decodelab::cuda {

namespace {

constexpr int kCopyThreads = 256;

__global__ void copy_words_kernel(const uint4* src, uint4* out, int64_t words) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words; i += stride) out[i] = src[i];
}

template <typename Bits>
__global__ void copy_strided_kernel(KernelTensor src, KernelTensor out, int64_t count) {
  const Bits* from = static_cast<const Bits*>(src.data);
  Bits* to = static_cast<Bits*>(out.data);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    to[strided_offset(out, i)] = from[strided_offset(src, i)];
  }
}

}  // namespace

void launch_copy(const KernelTensor& src, const KernelTensor& out, cudaStream_t stream) {
  const int64_t count = out.numel();
  if (count == 0) return;
  const size_t element = static_cast<size_t>(element_bytes(src.dtype));
  const size_t bytes = static_cast<size_t>(count) * element;
  if (dense(src) && dense(out) && aligned_to(src.data, 16) && aligned_to(out.data, 16) && bytes % 16 == 0) {
    const int64_t words = static_cast<int64_t>(bytes / 16);
    copy_words_kernel<<<blocks_for(words, kCopyThreads), kCopyThreads, 0, stream>>>(static_cast<const uint4*>(src.data),
                                                                            static_cast<uint4*>(out.data), words);
  } else if (element == 2) {
    copy_strided_kernel<uint16_t><<<blocks_for(count, kCopyThreads), kCopyThreads, 0, stream>>>(src, out, count);
  } else {
    copy_strided_kernel<uint32_t><<<blocks_for(count, kCopyThreads), kCopyThreads, 0, stream>>>(src, out, count);
  }
  CHECK_LAUNCH();
}

}  // namespace decodelab::cuda
