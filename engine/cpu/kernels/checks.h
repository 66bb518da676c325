// The CPU ops' argument checks: the engine's shared ones (engine/base/op_checks.h, which
// says what they throw and when) under the names the kernels call, each message opening
// with "cpu".
#pragma once

#include <string>
#include <utility>

#include "engine/base/op_checks.h"
#include "engine/base/tensor.h"

namespace decodelab::cpu {

inline constexpr OpChecks kOpChecks{"cpu"};

[[noreturn]] inline void fail_argument(const char* op, const std::string& problem) { kOpChecks.fail(op, problem); }
[[noreturn]] inline void fail_on_device(const char* op, const std::string& problem) {
  kOpChecks.fail_on_device(op, problem);
}

template <typename Message>
inline void require(bool condition, const char* op, Message&& message) {
  kOpChecks.require(condition, op, std::forward<Message>(message));
}

inline void require_rank(const Tensor& tensor, int rank, const char* op, const char* name) {
  kOpChecks.rank(tensor, rank, op, name);
}
inline void require_float(const Tensor& tensor, const char* op, const char* name) {
  kOpChecks.floating(tensor, op, name);
}
inline void require_dtype(const Tensor& tensor, DType dtype, const char* op, const char* name) {
  kOpChecks.dtype(tensor, dtype, op, name);
}
inline void require_unit_inner_stride(const Tensor& tensor, const char* op, const char* name) {
  kOpChecks.unit_inner_stride(tensor, op, name);
}
inline void require_same_shape(const Tensor& a, const Tensor& b, const char* op, const char* a_name,
                               const char* b_name) {
  kOpChecks.same_shape(a, b, op, a_name, b_name);
}

}  // namespace decodelab::cpu
