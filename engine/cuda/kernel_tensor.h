// The layout a kernel receives for a tensor argument: pointer, dtype, up to four dims and
// element strides, as a plain struct passed by value. engine/base/tensor.h's Tensor holds the
// same facts but uses std::array and throws, which device code cannot; launchers take
// this instead, so .cu files never depend on the engine's host-only headers at run time.
#pragma once

#include <cstdint>

#include "engine/base/dtype.h"
#include "engine/base/tensor.h"

namespace decodelab::cuda {

struct KernelTensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  int rank = 0;
  int64_t shape[4] = {1, 1, 1, 1};
  int64_t strides[4] = {0, 0, 0, 0};

  static KernelTensor of(const Tensor& tensor) {
    KernelTensor view;
    view.data = tensor.data;
    view.dtype = tensor.dtype;
    view.rank = tensor.rank;
    for (int axis = 0; axis < tensor.rank && axis < 4; ++axis) {
      view.shape[axis] = tensor.shape[axis];
      view.strides[axis] = tensor.strides[axis];
    }
    return view;
  }

  int64_t numel() const {
    int64_t count = 1;
    for (int axis = 0; axis < rank; ++axis) count *= shape[axis];
    return count;
  }
};

}  // namespace decodelab::cuda
