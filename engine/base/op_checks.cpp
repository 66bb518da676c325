// Argument checks for the CPU ops: messages name the op, the tensor and what was expected.
#include "engine/cpu/kernels/checks.h"

#include <array>
#include <stdexcept>

namespace decodelab::cpu {

std::string describe_tensor(const Tensor& tensor) {
  auto list = [&](const std::array<int64_t, 4>& values) {
    std::string text = "[";
    for (int i = 0; i < tensor.rank; ++i) {
      if (i > 0) text += ',';
      text += std::to_string(values[i]);
    }
    return text + "]";
  };
  return std::string(dtype_name(tensor.dtype)) + list(tensor.shape) + " strides " + list(tensor.strides);
}

void fail_argument(const char* op, const std::string& problem) {
  throw std::invalid_argument(std::string("cpu ") + op + ": " + problem);
}

void fail_on_device(const char* op, const std::string& problem) {
  throw std::runtime_error(std::string("cpu ") + op + " (on the device): " + problem);
}

void require_rank(const Tensor& tensor, int rank, const char* op, const char* name) {
  require(tensor.data != nullptr || tensor.numel() == 0, op, [&] { return std::string(name) + " has no data"; });
  require(tensor.rank == rank, op, [&] {
    return std::string(name) + " must have rank " + std::to_string(rank) + ", got " + describe_tensor(tensor);
  });
  for (int i = 0; i < tensor.rank; ++i) {
    require(tensor.shape[i] >= 0, op,
            [&] { return std::string(name) + " has a negative size: " + describe_tensor(tensor); });
  }
}

void require_float(const Tensor& tensor, const char* op, const char* name) {
  require(tensor.dtype == DType::F32 || tensor.dtype == DType::F16 || tensor.dtype == DType::BF16, op,
          [&] { return std::string(name) + " must be fp32, fp16 or bf16, got " + describe_tensor(tensor); });
}

void require_dtype(const Tensor& tensor, DType dtype, const char* op, const char* name) {
  require(tensor.dtype == dtype, op,
          [&] { return std::string(name) + " must be " + dtype_name(dtype) + ", got " + describe_tensor(tensor); });
}

void require_unit_inner_stride(const Tensor& tensor, const char* op, const char* name) {
  require(tensor.rank >= 1 && (tensor.strides[tensor.rank - 1] == 1 || tensor.shape[tensor.rank - 1] <= 1), op, [&] {
    return std::string(name) + " must have a unit stride on its last axis, got " + describe_tensor(tensor);
  });
}

void require_same_shape(const Tensor& a, const Tensor& b, const char* op, const char* a_name, const char* b_name) {
  bool same = a.rank == b.rank;
  for (int i = 0; same && i < a.rank; ++i) same = a.shape[i] == b.shape[i];
  require(same, op, [&] {
    return std::string(a_name) + " and " + b_name + " must have the same shape, got " + describe_tensor(a) + " and " +
           describe_tensor(b);
  });
}

}  // namespace decodelab::cpu
