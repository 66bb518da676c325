// matmul through cuBLAS: out[M, N] = x[M, K] · W[N, K]ᵀ, row-major, fp32 accumulation.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

#include "engine/cuda/kernel_tensor.h"

namespace decodelab::cuda {

// Device scratch for the staging copies a matmul may need; `slot` names the use so
// that two live scratch buffers never share memory. Returns nullptr when none can be
// had (during graph capture, where allocating is not allowed).
using ScratchProvider = std::function<void*(size_t bytes, int slot)>;

class CublasMatmul {
 public:
  // The handle runs on `stream` with `workspace` as its only workspace (no allocation
  // inside cuBLAS, so a matmul can be captured into a CUDA graph).
  CublasMatmul(cudaStream_t stream, void* workspace, size_t workspace_bytes);
  ~CublasMatmul();
  CublasMatmul(const CublasMatmul&) = delete;
  CublasMatmul& operator=(const CublasMatmul&) = delete;

  // x and weight of the same dtype with out of that dtype or fp32 go straight to
  // cublasGemmEx; anything else (mixed dtypes, element-strided operands, another output
  // dtype) is staged through fp32 scratch with cast kernels first.
  void run(const KernelTensor& x, const KernelTensor& weight, const KernelTensor& out, const ScratchProvider& scratch);

 private:
  // C (col-major N×M) = Wᵀ-view · x-view: the row-major product expressed for cuBLAS.
  void gemm(const KernelTensor& x, const KernelTensor& weight, const KernelTensor& out);

  cudaStream_t stream_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace decodelab::cuda
