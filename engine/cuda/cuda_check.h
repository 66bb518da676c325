// One check-macro family for every CUDA, cuBLAS and CUPTI call: a failed call throws
// std::runtime_error naming the statement, the file and the line. The three macros are
// one generic DECODELAB_CHECK_STATUS with a different success value and describer, so a
// file that uses only CUDA_CHECK needs neither the cuBLAS nor the CUPTI headers.
// CHECK_LAUNCH() follows every kernel launch: a bad launch configuration surfaces at the
// launcher that caused it, not at some later, unrelated call.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace decodelab::cuda {

std::string cuda_status_text(cudaError_t status);
std::string cublas_status_text(int status);  // cublasStatus_t
std::string cupti_status_text(int status);   // CUptiResult

[[noreturn]] void throw_check_failure(const char* family, const std::string& detail, const char* statement,
                                      const char* file, int line);

}  // namespace decodelab::cuda

#define DECODELAB_CHECK_STATUS(family, ok, describe, statement)                                              \
  do {                                                                                                      \
    const auto decodelab_status_ = (statement);                                                             \
    if (decodelab_status_ != (ok)) {                                                                        \
      ::decodelab::cuda::throw_check_failure(family, describe(decodelab_status_), #statement, __FILE__,     \
                                             __LINE__);                                                     \
    }                                                                                                       \
  } while (0)

#define CUDA_CHECK(statement) DECODELAB_CHECK_STATUS("CUDA", cudaSuccess, ::decodelab::cuda::cuda_status_text, statement)
#define CUBLAS_CHECK(statement) \
  DECODELAB_CHECK_STATUS("cuBLAS", CUBLAS_STATUS_SUCCESS, ::decodelab::cuda::cublas_status_text, statement)
#define CUPTI_CHECK(statement) \
  DECODELAB_CHECK_STATUS("CUPTI", CUPTI_SUCCESS, ::decodelab::cuda::cupti_status_text, statement)

// After every kernel launch (launch errors are reported asynchronously through the last error).
#define CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
