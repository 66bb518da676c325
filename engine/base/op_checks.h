// Argument checks shared by every backend's ops. Host-side checks run when an op is enqueued
// and throw std::invalid_argument (a caller's contract violation, reported where it was
// made), naming the backend, the op, the tensor and what was expected. Problems found on the
// device while a kernel runs (a token id or position read from device memory that is out of
// range) are std::runtime_error, which a backend keeps until the next synchronize(), as a
// CUDA error surfaces at the next sync. Each backend holds one OpChecks with its name
// (engine/cpu/kernels/checks.h, engine/cuda/cuda_backend_ops.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "engine/base/tensor.h"

namespace decodelab {

// "fp16[4,1024] strides [1024,1]"
std::string describe_tensor(const Tensor& tensor);
// "x fp16[4,1024] strides [1024,1]"
std::string describe_tensor(const char* name, const Tensor& tensor);

class OpChecks {
 public:
  explicit constexpr OpChecks(const char* backend) : backend_(backend) {}

  [[noreturn]] void fail(const char* op, const std::string& problem) const;
  [[noreturn]] void fail_on_device(const char* op, const std::string& problem) const;

  // message() builds the text only on failure: checks run on every enqueue.
  template <typename Message>
  void require(bool condition, const char* op, Message&& message) const {
    if (!condition) fail(op, std::string(message()));
  }

  // Data pointer present (or nothing to point to), rank as expected, no negative size.
  void rank(const Tensor& tensor, int rank, const char* op, const char* name) const;
  void floating(const Tensor& tensor, const char* op, const char* name) const;  // F32, F16 or BF16
  void dtype(const Tensor& tensor, DType dtype, const char* op, const char* name) const;
  // The last axis has unit stride (rows may be strided): what vector kernels read.
  void unit_inner_stride(const Tensor& tensor, const char* op, const char* name) const;
  void same_shape(const Tensor& a, const Tensor& b, const char* op, const char* a_name, const char* b_name) const;
  // `rows` rows of sequences, rows_per_sequence to a sequence, need at most `sequences`.
  void sequences(int64_t rows, int rows_per_sequence, int64_t sequences, const char* op) const;

 private:
  const char* backend_;  // the messages' first word: "cpu", "cuda"
};

}  // namespace decodelab
