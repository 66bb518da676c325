// The op argument checks (op_checks.h): messages name the backend, the op, the tensor and
// what was expected.
#include "engine/base/op_checks.h"

#include <array>
#include <stdexcept>

namespace decodelab {

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

std::string describe_tensor(const char* name, const Tensor& tensor) {
  return std::string(name) + " " + describe_tensor(tensor);
}

void OpChecks::fail(const char* op, const std::string& problem) const {
  throw std::invalid_argument(std::string(backend_) + " " + op + ": " + problem);
}

void OpChecks::fail_on_device(const char* op, const std::string& problem) const {
  throw std::runtime_error(std::string(backend_) + " " + op + " (on the device): " + problem);
}

void OpChecks::rank(const Tensor& tensor, int rank, const char* op, const char* name) const {
  require(tensor.data != nullptr || tensor.numel() == 0, op, [&] { return std::string(name) + " has no data"; });
  require(tensor.rank == rank, op, [&] {
    return std::string(name) + " must have rank " + std::to_string(rank) + ", got " + describe_tensor(tensor);
  });
  for (int i = 0; i < tensor.rank; ++i) {
    require(tensor.shape[i] >= 0, op,
            [&] { return std::string(name) + " has a negative size: " + describe_tensor(tensor); });
  }
}

void OpChecks::floating(const Tensor& tensor, const char* op, const char* name) const {
  require(tensor.dtype == DType::F32 || tensor.dtype == DType::F16 || tensor.dtype == DType::BF16, op,
          [&] { return std::string(name) + " must be fp32, fp16 or bf16, got " + describe_tensor(tensor); });
}

void OpChecks::dtype(const Tensor& tensor, DType dtype, const char* op, const char* name) const {
  require(tensor.dtype == dtype, op,
          [&] { return std::string(name) + " must be " + dtype_name(dtype) + ", got " + describe_tensor(tensor); });
}

void OpChecks::unit_inner_stride(const Tensor& tensor, const char* op, const char* name) const {
  require(tensor.rank >= 1 && (tensor.strides[tensor.rank - 1] == 1 || tensor.shape[tensor.rank - 1] <= 1), op, [&] {
    return std::string(name) + " must have a unit stride on its last axis, got " + describe_tensor(tensor);
  });
}

void OpChecks::same_shape(const Tensor& a, const Tensor& b, const char* op, const char* a_name,
                          const char* b_name) const {
  bool same = a.rank == b.rank;
  for (int i = 0; same && i < a.rank; ++i) same = a.shape[i] == b.shape[i];
  require(same, op, [&] {
    return std::string(a_name) + " and " + b_name + " must have the same shape, got " + describe_tensor(a) + " and " +
           describe_tensor(b);
  });
}

void OpChecks::sequences(int64_t rows, int rows_per_sequence, int64_t sequences, const char* op) const {
  require(rows_per_sequence >= 1, op,
          [&] { return "rows_per_sequence must be >= 1, got " + std::to_string(rows_per_sequence); });
  const int64_t needed = (rows + rows_per_sequence - 1) / rows_per_sequence;
  require(needed <= sequences, op, [&] {
    return std::to_string(rows) + " rows at " + std::to_string(rows_per_sequence) + " per sequence need " +
           std::to_string(needed) + " sequences, the cache/history has " + std::to_string(sequences);
  });
}

}  // namespace decodelab
