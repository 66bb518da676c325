// Status texts for the check macros (cuda_check.h) and the one place that throws.
#include "engine/cuda/cuda_check.h"

#include <cublas_v2.h>
#include <cupti.h>

namespace decodelab::cuda {

std::string cuda_status_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

std::string cublas_status_text(int status) {
  return std::string(cublasGetStatusString(static_cast<cublasStatus_t>(status))) + " (" + std::to_string(status) +
         ")";
}

std::string cupti_status_text(int status) {
  const char* text = nullptr;
  if (cuptiGetResultString(static_cast<CUptiResult>(status), &text) != CUPTI_SUCCESS || text == nullptr) {
    text = "unknown CUPTI result";
  }
  return std::string(text) + " (" + std::to_string(status) + ")";
}

void throw_check_failure(const char* family, const std::string& detail, const char* statement, const char* file,
                         int line) {
  // A failed runtime call is also left as the "last error"; clear it (when not sticky) so
  // that the next launch check does not report this failure a second time.
  cudaGetLastError();
  throw std::runtime_error(std::string(family) + " error: " + detail + " in `" + statement + "` at " + file + ":" +
                           std::to_string(line));
}

}  // namespace decodelab::cuda
