// A tensor is a non-owning view of device memory: pointer, dtype, up to four dims and
// element strides. Views never own: buffers belong to whoever allocated them
// (weights, KV cache, activation arena), so a view is cheap to pass around.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "engine/base/dtype.h"

namespace decodelab {

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  int rank = 0;
  std::array<int64_t, 4> shape{};    // logical sizes, outermost first
  std::array<int64_t, 4> strides{};  // in elements, not bytes

  // A contiguous (row-major) view.
  static Tensor contiguous(void* data, DType dtype, std::initializer_list<int64_t> dims) {
    Tensor tensor;
    tensor.data = data;
    tensor.dtype = dtype;
    tensor.rank = static_cast<int>(dims.size());
    if (tensor.rank < 1 || tensor.rank > 4) throw std::invalid_argument("tensor rank must be 1..4");
    int axis = 0;
    for (int64_t dim : dims) tensor.shape[axis++] = dim;
    int64_t stride = 1;
    for (int i = tensor.rank - 1; i >= 0; --i) {
      tensor.strides[i] = stride;
      stride *= tensor.shape[i];
    }
    return tensor;
  }

  // A view with explicit strides (elements).
  static Tensor strided(void* data, DType dtype, std::initializer_list<int64_t> dims,
                        std::initializer_list<int64_t> element_strides) {
    Tensor tensor = contiguous(data, dtype, dims);
    if (element_strides.size() != dims.size()) throw std::invalid_argument("strides must match dims");
    int axis = 0;
    for (int64_t stride : element_strides) tensor.strides[axis++] = stride;
    return tensor;
  }

  int64_t numel() const {
    int64_t count = 1;
    for (int i = 0; i < rank; ++i) count *= shape[i];
    return count;
  }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }

  bool is_contiguous() const {
    int64_t expected = 1;
    for (int i = rank - 1; i >= 0; --i) {
      if (shape[i] != 1 && strides[i] != expected) return false;
      expected *= shape[i];
    }
    return true;
  }

  // Rows [begin, begin + count) along the first axis.
  Tensor rows(int64_t begin, int64_t count) const {
    Tensor view = *this;
    view.data = static_cast<char*>(data) + begin * strides[0] * static_cast<int64_t>(dtype_size(dtype));
    view.shape[0] = count;
    return view;
  }

  template <typename T>
  T* as() const { return static_cast<T*>(data); }

  std::string shape_string() const {
    std::string text = "[";
    for (int i = 0; i < rank; ++i) {
      if (i) text += ',';
      text += std::to_string(shape[i]);
    }
    text += ']';
    return text;
  }
};

}  // namespace decodelab
