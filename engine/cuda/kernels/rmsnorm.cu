// rmsnorm: one block per row; the row is read twice (sum of squares, then scale), the
// second time from L1/L2. Same-dtype rows with 16-byte aligned starts use 16-byte packs;
// anything else (mixed dtypes, element strides) uses the generic path.
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels/device_utils.cuh"
#include "engine/cuda/kernels/rmsnorm.cuh"

namespace decodelab::cuda {

namespace {

constexpr int kRmsnormThreads = 256;

template <typename T>
__global__ void rmsnorm_packed_kernel(const T* x, int64_t x_row_stride, const T* weight, float eps, T* out,
                                      int64_t out_row_stride, int64_t hidden) {
  __shared__ float scratch[32];
  constexpr int kPack = Pack<T>::size;
  const T* row = x + blockIdx.x * x_row_stride;
  T* out_row = out + blockIdx.x * out_row_stride;
  const int64_t packs = hidden / kPack;

  float sum_squares = 0.0f;
  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<T> values = load_pack(row + p * kPack);
#pragma unroll
    for (int e = 0; e < kPack; ++e) {
      const float value = to_float(values.values[e]);
      sum_squares += value * value;
    }
  }
  const float inverse_rms = 1.0f / sqrtf(block_sum(sum_squares, scratch) / static_cast<float>(hidden) + eps);

  for (int64_t p = threadIdx.x; p < packs; p += blockDim.x) {
    const Pack<T> values = load_pack(row + p * kPack);
    const Pack<T> weights = load_pack(weight + p * kPack);
    Pack<T> result;
#pragma unroll
    for (int e = 0; e < kPack; ++e) {
      const float normalised = round_through<T>(to_float(values.values[e]) * inverse_rms);
      result.values[e] = from_float<T>(to_float(weights.values[e]) * normalised);
    }
    store_pack(out_row + p * kPack, result);
  }
}

__global__ void rmsnorm_generic_kernel(KernelTensor x, KernelTensor weight, float eps, KernelTensor out) {
  __shared__ float scratch[32];
  const int64_t hidden = x.shape[1];
  const int64_t x_row = blockIdx.x * x.strides[0];
  const int64_t out_row = blockIdx.x * out.strides[0];

  float sum_squares = 0.0f;
  for (int64_t d = threadIdx.x; d < hidden; d += blockDim.x) {
    const float value = load_any(x.data, x.dtype, x_row + d * x.strides[1]);
    sum_squares += value * value;
  }
  const float inverse_rms = 1.0f / sqrtf(block_sum(sum_squares, scratch) / static_cast<float>(hidden) + eps);

  for (int64_t d = threadIdx.x; d < hidden; d += blockDim.x) {
    const float value = load_any(x.data, x.dtype, x_row + d * x.strides[1]);
    const float normalised = round_any(x.dtype, value * inverse_rms);
    const float scale = load_any(weight.data, weight.dtype, d * weight.strides[0]);
    store_any(out.data, out.dtype, out_row + d * out.strides[1], scale * normalised);
  }
}

}  // namespace

void launch_rmsnorm(const KernelTensor& x, const KernelTensor& weight, float eps, const KernelTensor& out,
                    cudaStream_t stream) {
  const int64_t rows = x.shape[0];
  const int64_t hidden = x.shape[1];
  if (rows == 0 || hidden == 0) return;
  const int64_t pack = 16 / element_bytes(x.dtype);
  const bool packed = x.dtype == weight.dtype && x.dtype == out.dtype && x.strides[1] == 1 && out.strides[1] == 1 &&
                      weight.strides[0] == 1 && hidden % pack == 0 && x.strides[0] % pack == 0 &&
                      out.strides[0] % pack == 0 && aligned_to(x.data, 16) && aligned_to(out.data, 16) &&
                      aligned_to(weight.data, 16);
  if (packed) {
    dispatch_float_dtype(x.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      rmsnorm_packed_kernel<T><<<static_cast<unsigned int>(rows), kRmsnormThreads, 0, stream>>>(
          static_cast<const T*>(x.data), x.strides[0], static_cast<const T*>(weight.data), eps,
          static_cast<T*>(out.data), out.strides[0], hidden);
    });
  } else {
    rmsnorm_generic_kernel<<<static_cast<unsigned int>(rows), kRmsnormThreads, 0, stream>>>(x, weight, eps, out);
  }
  CHECK_LAUNCH();
}

}  // namespace decodelab::cuda
