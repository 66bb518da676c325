// Kernel templates for elementwise ops (cast, add, swiglu): out[i] = op(a[i]) or
// op(a[i], b[i]), computed in fp32 and rounded once on store. Two paths per op: a
// contiguous one that moves eight elements per thread in aligned vectors (16 bytes for
// half types, 2x16 for fp32), and a generic one for any strides and any mix of dtypes.
// The launcher picks the vector path only when every pointer is aligned for it; the
// tail that does not fill a vector goes through scalar code in the same kernel.
#pragma once

#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels/device_utils.cuh"

namespace decodelab::cuda {

template <typename T>
struct alignas(8 * sizeof(T)) Vec8 {
  T values[8];
};

template <typename TA, typename TOut, typename Op>
__global__ void unary_contiguous_kernel(const TA* a, TOut* out, int64_t count, Op op) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t vectors = count / 8;
  for (int64_t v = first; v < vectors; v += stride) {
    const Vec8<TA> in = reinterpret_cast<const Vec8<TA>*>(a)[v];
    Vec8<TOut> result;
#pragma unroll
    for (int e = 0; e < 8; ++e) result.values[e] = from_float<TOut>(op(to_float(in.values[e])));
    reinterpret_cast<Vec8<TOut>*>(out)[v] = result;
  }
  for (int64_t i = vectors * 8 + first; i < count; i += stride) out[i] = from_float<TOut>(op(to_float(a[i])));
}

template <typename TA, typename TB, typename TOut, typename Op>
__global__ void binary_contiguous_kernel(const TA* a, const TB* b, TOut* out, int64_t count, Op op) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t vectors = count / 8;
  for (int64_t v = first; v < vectors; v += stride) {
    const Vec8<TA> in_a = reinterpret_cast<const Vec8<TA>*>(a)[v];
    const Vec8<TB> in_b = reinterpret_cast<const Vec8<TB>*>(b)[v];
    Vec8<TOut> result;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      result.values[e] = from_float<TOut>(op(to_float(in_a.values[e]), to_float(in_b.values[e])));
    }
    reinterpret_cast<Vec8<TOut>*>(out)[v] = result;
  }
  for (int64_t i = vectors * 8 + first; i < count; i += stride) {
    out[i] = from_float<TOut>(op(to_float(a[i]), to_float(b[i])));
  }
}

template <typename Op>
__global__ void unary_strided_kernel(KernelTensor a, KernelTensor out, int64_t count, Op op) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float value = load_any(a.data, a.dtype, strided_offset(a, i));
    store_any(out.data, out.dtype, strided_offset(out, i), op(value));
  }
}

template <typename Op>
__global__ void binary_strided_kernel(KernelTensor a, KernelTensor b, KernelTensor out, int64_t count, Op op) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float value_a = load_any(a.data, a.dtype, strided_offset(a, i));
    const float value_b = load_any(b.data, b.dtype, strided_offset(b, i));
    store_any(out.data, out.dtype, strided_offset(out, i), op(value_a, value_b));
  }
}

// Whether a view is dense row-major (size-1 dims may have any stride).
inline bool dense(const KernelTensor& view) {
  int64_t expected = 1;
  for (int axis = view.rank - 1; axis >= 0; --axis) {
    if (view.shape[axis] != 1 && view.strides[axis] != expected) return false;
    expected *= view.shape[axis];
  }
  return true;
}

inline bool vector_ready(const KernelTensor& view) {
  return dense(view) && view.dtype != DType::I32 && aligned_to(view.data, 8 * static_cast<size_t>(element_bytes(view.dtype)));
}

constexpr int kElementwiseThreads = 256;

// out = op(a): the vector path when both are dense and aligned, else the generic one.
template <typename Op>
void launch_unary(const KernelTensor& a, const KernelTensor& out, Op op, cudaStream_t stream) {
  const int64_t count = out.numel();
  if (count == 0) return;
  if (vector_ready(a) && vector_ready(out)) {
    const unsigned int blocks = blocks_for((count + 7) / 8, kElementwiseThreads);
    dispatch_float_dtype(a.dtype, [&](auto a_tag) {
      using TA = typename decltype(a_tag)::type;
      dispatch_float_dtype(out.dtype, [&](auto out_tag) {
        using TOut = typename decltype(out_tag)::type;
        unary_contiguous_kernel<TA, TOut, Op><<<blocks, kElementwiseThreads, 0, stream>>>(
            static_cast<const TA*>(a.data), static_cast<TOut*>(out.data), count, op);
      });
    });
  } else {
    unary_strided_kernel<Op><<<blocks_for(count, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
        a, out, count, op);
  }
  CHECK_LAUNCH();
}

// out = op(a, b): the vector path when all three are dense and aligned and a, b share a
// dtype (keeps the instantiations few), else the generic one.
template <typename Op>
void launch_binary(const KernelTensor& a, const KernelTensor& b, const KernelTensor& out, Op op, cudaStream_t stream) {
  const int64_t count = out.numel();
  if (count == 0) return;
  if (vector_ready(a) && vector_ready(b) && vector_ready(out) && a.dtype == b.dtype) {
    const unsigned int blocks = blocks_for((count + 7) / 8, kElementwiseThreads);
    dispatch_float_dtype(a.dtype, [&](auto a_tag) {
      using TA = typename decltype(a_tag)::type;
      dispatch_float_dtype(out.dtype, [&](auto out_tag) {
        using TOut = typename decltype(out_tag)::type;
        binary_contiguous_kernel<TA, TA, TOut, Op><<<blocks, kElementwiseThreads, 0, stream>>>(
            static_cast<const TA*>(a.data), static_cast<const TA*>(b.data), static_cast<TOut*>(out.data), count, op);
      });
    });
  } else {
    binary_strided_kernel<Op><<<blocks_for(count, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
        a, b, out, count, op);
  }
  CHECK_LAUNCH();
}

}  // namespace decodelab::cuda
