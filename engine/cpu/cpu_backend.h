// The CPU backend: a real asynchronous device. A worker thread executes the stream in
// order; kernels run on every core (OpenMP) with fp16/bf16 widened in registers.
#pragma once

#include <memory>

#include "engine/backend.h"

namespace decodelab {

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);

}  // namespace decodelab
