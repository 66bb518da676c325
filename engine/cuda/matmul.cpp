// matmul through cuBLAS. Row-major out[M,N] = x[M,K]·W[N,K]ᵀ is, read column-major,
// outᵀ[N,M] = W·xᵀ: W's row-major storage is a column-major K×N matrix, so A = W with
// op T (N×K), B = x's storage as a column-major K×M matrix with op N, C = out's storage
// as column-major N×M; m = N, n = M, k = K and the leading dims are the row strides.
// Compute type is CUBLAS_COMPUTE_32F for every dtype: tensor cores for fp16/bf16 with
// fp32 accumulation, and true fp32 (no TF32, reductions not in reduced precision).
#include "engine/cuda/matmul.h"

#include <climits>
#include <stdexcept>
#include <string>

#include "engine/cuda/kernels/cast.cuh"
#include "engine/cuda/cuda_check.h"

namespace decodelab::cuda {

namespace {

enum ScratchSlot { kScratchX = 0, kScratchWeight = 1, kScratchOut = 2 };

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::I32: break;
  }
  throw std::invalid_argument("cuda matmul: i32 operands are not supported");
}

bool fits_int(int64_t value) { return value >= 0 && value <= INT_MAX; }

// Row-major [rows, columns] with unit element stride and a row stride cuBLAS accepts.
bool gemm_ready(const KernelTensor& view, DType dtype) {
  return view.dtype == dtype && view.strides[1] == 1 && view.strides[0] >= view.shape[1] && view.strides[0] >= 1 &&
         fits_int(view.strides[0]);
}

KernelTensor contiguous_view(void* data, DType dtype, int64_t rows, int64_t columns) {
  KernelTensor view;
  view.data = data;
  view.dtype = dtype;
  view.rank = 2;
  view.shape[0] = rows;
  view.shape[1] = columns;
  view.strides[0] = columns;
  view.strides[1] = 1;
  return view;
}

// A copy of `view` as a dense [rows, columns] matrix of `dtype` in scratch.
KernelTensor stage(const KernelTensor& view, DType dtype, int slot, const ScratchProvider& scratch,
                   cudaStream_t stream) {
  const size_t bytes = static_cast<size_t>(view.shape[0] * view.shape[1]) * dtype_size(dtype);
  void* memory = scratch(bytes, slot);
  if (memory == nullptr) {
    throw std::runtime_error("cuda matmul: staging an operand needs " + std::to_string(bytes) +
                             " bytes of scratch, which cannot be allocated now (during graph capture: run the "
                             "same matmul once before capturing)");
  }
  const KernelTensor staged = contiguous_view(memory, dtype, view.shape[0], view.shape[1]);
  launch_cast(view, staged, stream);
  return staged;
}

}  // namespace

CublasMatmul::CublasMatmul(cudaStream_t stream, void* workspace, size_t workspace_bytes) : stream_(stream) {
  CUBLAS_CHECK(cublasCreate(&handle_));
  try {
    CUBLAS_CHECK(cublasSetStream(handle_, stream_));
    // After cublasSetStream, which resets the workspace to cuBLAS's own pool.
    CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace, workspace_bytes));
    CUBLAS_CHECK(cublasSetMathMode(
        handle_, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    CUBLAS_CHECK(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST));
  } catch (...) {
    cublasDestroy(handle_);
    throw;
  }
}

CublasMatmul::~CublasMatmul() {
  if (handle_) cublasDestroy(handle_);
}

void CublasMatmul::run(const KernelTensor& x, const KernelTensor& weight, const KernelTensor& out,
                       const ScratchProvider& scratch) {
  const int64_t rows = x.shape[0];
  const int64_t columns = weight.shape[0];
  const int64_t inner = x.shape[1];
  if (rows == 0 || columns == 0) return;
  if (inner == 0) {  // an empty sum: zeros, without asking cuBLAS about k = 0
    const size_t element = dtype_size(out.dtype);
    if (out.strides[1] == 1) {
      CUDA_CHECK(cudaMemset2DAsync(out.data, static_cast<size_t>(out.strides[0]) * element, 0,
                                   static_cast<size_t>(columns) * element, static_cast<size_t>(rows), stream_));
      return;
    }
    throw std::invalid_argument("cuda matmul: K = 0 with an element-strided output is not supported");
  }
  if (!fits_int(rows) || !fits_int(columns) || !fits_int(inner)) {
    throw std::invalid_argument("cuda matmul: dimensions beyond cuBLAS's 32-bit range");
  }

  const DType gemm_dtype = x.dtype == weight.dtype ? x.dtype : DType::F32;
  const KernelTensor a = gemm_ready(weight, gemm_dtype) ? weight : stage(weight, gemm_dtype, kScratchWeight, scratch, stream_);
  const KernelTensor b = gemm_ready(x, gemm_dtype) ? x : stage(x, gemm_dtype, kScratchX, scratch, stream_);

  const bool direct_out = (out.dtype == gemm_dtype || out.dtype == DType::F32) && gemm_ready(out, out.dtype);
  if (direct_out) {
    gemm(b, a, out);
    return;
  }
  const size_t bytes = static_cast<size_t>(rows * columns) * sizeof(float);
  void* memory = scratch(bytes, kScratchOut);
  if (memory == nullptr) {
    throw std::runtime_error("cuda matmul: the fp32 result needs " + std::to_string(bytes) +
                             " bytes of scratch, which cannot be allocated now (during graph capture: run the same "
                             "matmul once before capturing)");
  }
  const KernelTensor result = contiguous_view(memory, DType::F32, rows, columns);
  gemm(b, a, result);
  launch_cast(result, out, stream_);
}

void CublasMatmul::gemm(const KernelTensor& x, const KernelTensor& weight, const KernelTensor& out) {
  const int m = static_cast<int>(weight.shape[0]);  // N
  const int n = static_cast<int>(x.shape[0]);       // M
  const int k = static_cast<int>(x.shape[1]);       // K
  const float alpha = 1.0f;
  const float beta = 0.0f;
  CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, weight.data, cuda_type(weight.dtype),
                            static_cast<int>(weight.strides[0]), x.data, cuda_type(x.dtype),
                            static_cast<int>(x.strides[0]), &beta, out.data, cuda_type(out.dtype),
                            static_cast<int>(out.strides[0]), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace decodelab::cuda
