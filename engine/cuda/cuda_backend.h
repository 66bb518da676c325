// The CUDA backend: cuBLAS matmuls, custom kernels, one stream, CUPTI device times.
#pragma once

#include <memory>
#include <string>

#include "engine/backend.h"

namespace decodelab {

int cuda_device_count();  // 0 when no driver or device is present (never throws)
// Why no CUDA device is usable, in the runtime's words (with the driver's and the
// runtime's CUDA versions when they are the cause); empty when one is. Never throws.
std::string cuda_device_problem();
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

}  // namespace decodelab
