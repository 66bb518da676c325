// Argument checks shared by the CPU ops. Host-side checks run at enqueue and throw
// std::invalid_argument (a caller's contract violation, reported where it was made);
// device-side problems found while a kernel runs (a token id or position read from device
// memory that is out of range) throw std::runtime_error, which the stream keeps and the
// next synchronize() rethrows, as a CUDA error surfaces at the next sync.
#pragma once

#include <string>

#include "engine/base/tensor.h"

namespace decodelab::cpu {

// "fp16[4,1024] strides [1024,1]"
std::string describe_tensor(const Tensor& tensor);

[[noreturn]] void fail_argument(const char* op, const std::string& problem);
[[noreturn]] void fail_on_device(const char* op, const std::string& problem);

// message() builds the text only on failure: checks run on every enqueue.
template <typename Message>
inline void require(bool condition, const char* op, Message&& message) {
  if (!condition) fail_argument(op, std::string(message()));
}

// Data pointer present and rank as expected.
void require_rank(const Tensor& tensor, int rank, const char* op, const char* name);
void require_float(const Tensor& tensor, const char* op, const char* name);  // F32, F16 or BF16
void require_dtype(const Tensor& tensor, DType dtype, const char* op, const char* name);
// The last axis has unit stride (rows may be strided): what the vector kernels read.
void require_unit_inner_stride(const Tensor& tensor, const char* op, const char* name);
void require_same_shape(const Tensor& a, const Tensor& b, const char* op, const char* a_name, const char* b_name);

}  // namespace decodelab::cpu
