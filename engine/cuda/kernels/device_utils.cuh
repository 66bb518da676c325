// Device-side helpers shared by the kernels: fp16/bf16 <-> fp32 conversion (round to
// nearest even, as the CPU backend and torch round), 16-byte packs for vectorised
// loads, warp and block reductions, element access by runtime dtype for the generic
// (strided, mixed-dtype) paths, and strided offsets for rank <= 4 views.
// The one non-obvious choice: every kernel has a generic path that is obviously right
// (runtime dtype, any strides) and, where the data allows, a fast path beside it; the
// launchers choose, and the tests run both.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/cuda/kernel_tensor.h"
#include "engine/base/dtype.h"

namespace decodelab::cuda {

// --- scalar conversions -------------------------------------------------------------
__device__ __forceinline__ float to_float(float value) { return value; }
__device__ __forceinline__ float to_float(__half value) { return __half2float(value); }
__device__ __forceinline__ float to_float(__nv_bfloat16 value) { return __bfloat162float(value); }

template <typename T>
__device__ __forceinline__ T from_float(float value);
template <>
__device__ __forceinline__ float from_float<float>(float value) { return value; }
template <>
__device__ __forceinline__ __half from_float<__half>(float value) { return __float2half_rn(value); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float value) {
  return __float2bfloat16_rn(value);
}

// Round a float through a storage dtype (identity for fp32), like dtype.h's round_to.
template <typename T>
__device__ __forceinline__ float round_through(float value) { return to_float(from_float<T>(value)); }

// dtype.h's dtype_size, callable from device code.
__host__ __device__ __forceinline__ int element_bytes(DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 ? 2 : 4;
}

// --- element access by runtime dtype (generic paths) ----------------------------------
__device__ __forceinline__ float load_any(const void* data, DType dtype, int64_t index) {
  switch (dtype) {
    case DType::F16: return __half2float(static_cast<const __half*>(data)[index]);
    case DType::BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[index]);
    case DType::I32: return static_cast<float>(static_cast<const int32_t*>(data)[index]);
    default: return static_cast<const float*>(data)[index];
  }
}

__device__ __forceinline__ void store_any(void* data, DType dtype, int64_t index, float value) {
  switch (dtype) {
    case DType::F16: static_cast<__half*>(data)[index] = __float2half_rn(value); break;
    case DType::BF16: static_cast<__nv_bfloat16*>(data)[index] = __float2bfloat16_rn(value); break;
    case DType::I32: static_cast<int32_t*>(data)[index] = static_cast<int32_t>(value); break;
    default: static_cast<float*>(data)[index] = value; break;
  }
}

__device__ __forceinline__ float round_any(DType dtype, float value) {
  switch (dtype) {
    case DType::F16: return __half2float(__float2half_rn(value));
    case DType::BF16: return __bfloat162float(__float2bfloat16_rn(value));
    default: return value;
  }
}

// --- strided offsets ----------------------------------------------------------------
// Offset (elements) of the linear_index-th element, in row-major order of `shape`.
__device__ __forceinline__ int64_t strided_offset(const KernelTensor& view, int64_t linear_index) {
  int64_t offset = 0;
  // Unrolled with constant axes, so the view's arrays stay in registers / the constant
  // bank instead of being copied to local memory for dynamic indexing.
#pragma unroll
  for (int axis = 3; axis >= 0; --axis) {
    if (axis < view.rank) {
      const int64_t size = view.shape[axis];
      offset += (linear_index % size) * view.strides[axis];
      linear_index /= size;
    }
  }
  return offset;
}

// --- 16-byte packs ------------------------------------------------------------------
template <typename T>
struct alignas(16) Pack {
  static constexpr int size = 16 / sizeof(T);
  T values[size];
};

template <typename T>
__device__ __forceinline__ Pack<T> load_pack(const T* address) {
  Pack<T> pack;
  // A plain load, not __ldg: some callers write the same buffer (out may alias an input).
  *reinterpret_cast<uint4*>(&pack) = *reinterpret_cast<const uint4*>(address);
  return pack;
}

template <typename T>
__device__ __forceinline__ void store_pack(T* address, const Pack<T>& pack) {
  *reinterpret_cast<uint4*>(address) = *reinterpret_cast<const uint4*>(&pack);
}

// --- reductions ---------------------------------------------------------------------
__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

__device__ __forceinline__ float warp_max(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

// Sum over the whole block; every thread gets the result. `scratch` holds 32 floats.
// Must be reached by all threads of the block (it synchronises).
__device__ __forceinline__ float block_sum(float value, float* scratch) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warps = (blockDim.x + 31) / 32;
  value = warp_sum(value);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  float total = 0.0f;
  for (int i = 0; i < warps; ++i) total += scratch[i];
  return total;
}

// --- launch helpers -----------------------------------------------------------------
inline unsigned int blocks_for(int64_t work_items, int threads_per_block, int64_t max_blocks = 65535LL * 32) {
  int64_t blocks = (work_items + threads_per_block - 1) / threads_per_block;
  if (blocks < 1) blocks = 1;
  if (blocks > max_blocks) blocks = max_blocks;  // kernels loop (grid-stride) past this
  return static_cast<unsigned int>(blocks);
}

inline bool aligned_to(const void* pointer, size_t bytes) { return reinterpret_cast<uintptr_t>(pointer) % bytes == 0; }

// Calls f(TypeTag<T>{}) with T the device type of a floating storage dtype.
template <typename T>
struct TypeTag {
  using type = T;
};

template <typename Function>
void dispatch_float_dtype(DType dtype, Function&& function) {
  switch (dtype) {
    case DType::F32: function(TypeTag<float>{}); return;
    case DType::F16: function(TypeTag<__half>{}); return;
    case DType::BF16: function(TypeTag<__nv_bfloat16>{}); return;
    case DType::I32: break;
  }
  throw std::invalid_argument(std::string("expected a floating dtype (fp32, fp16, bf16), got ") + dtype_name(dtype));
}

}  // namespace decodelab::cuda
