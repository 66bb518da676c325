// Host-side scans for non-finite values. A strided view is read as the contiguous span
// from its first to its last element (views here are windows of one buffer), then
// walked with its strides, so elements between the view's rows are never scanned.
#include "engine/numerics.h"

#include <cmath>
#include <vector>

namespace decodelab {

NonFiniteScan scan_non_finite(const void* data, DType dtype, int64_t count) {
  NonFiniteScan scan;
  if (dtype == DType::I32) return scan;
  for (int64_t i = 0; i < count; ++i) {
    const float value = load_as_float(data, dtype, static_cast<size_t>(i));
    if (std::isfinite(value)) continue;
    if (scan.count++ == 0) {
      scan.first = i;
      scan.first_value = value;
    }
  }
  return scan;
}

NonFiniteScan scan_device_tensor(Backend& backend, const Tensor& tensor, OpId read_id) {
  if (tensor.dtype == DType::I32 || tensor.numel() == 0) return {};
  int64_t span = 1;  // elements from the first to the last of the view
  for (int axis = 0; axis < tensor.rank; ++axis) span += (tensor.shape[axis] - 1) * tensor.strides[axis];
  const size_t element = dtype_size(tensor.dtype);
  std::vector<uint8_t> host(static_cast<size_t>(span) * element);
  backend.copy_to_host(host.data(), tensor.data, host.size(), /*pinned=*/true, read_id);
  if (tensor.is_contiguous()) return scan_non_finite(host.data(), tensor.dtype, tensor.numel());

  NonFiniteScan scan;
  const int64_t count = tensor.numel();
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t offset = 0, rest = flat;
    for (int axis = tensor.rank - 1; axis >= 0; --axis) {
      offset += (rest % tensor.shape[axis]) * tensor.strides[axis];
      rest /= tensor.shape[axis];
    }
    const float value = load_as_float(host.data(), tensor.dtype, static_cast<size_t>(offset));
    if (std::isfinite(value)) continue;
    if (scan.count++ == 0) {
      scan.first = flat;
      scan.first_value = value;
    }
  }
  return scan;
}

std::string index_string(const Tensor& tensor, int64_t flat_index) {
  std::vector<int64_t> index(tensor.rank);
  for (int axis = tensor.rank - 1; axis >= 0; --axis) {
    index[axis] = flat_index % tensor.shape[axis];
    flat_index /= tensor.shape[axis];
  }
  std::string text = "[";
  for (int axis = 0; axis < tensor.rank; ++axis) {
    if (axis) text += ',';
    text += std::to_string(index[axis]);
  }
  return text + "]";
}

std::string non_finite_name(float value) {
  if (std::isnan(value)) return "nan";
  return value > 0 ? "inf" : "-inf";
}

}  // namespace decodelab
