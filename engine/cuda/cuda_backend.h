// The CUDA backend: cuBLAS matmuls, custom kernels, one stream, CUPTI device times.
#pragma once

#include <memory>

#include "engine/backend.h"

namespace decodelab {

int cuda_device_count();  // 0 when no driver or device is present (never throws)
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

}  // namespace decodelab
