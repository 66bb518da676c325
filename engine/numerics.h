// Finding non-finite values (NaN, ±Inf) in device tensors, for --check-numerics: a tensor
// is read back to the host with a blocking read and scanned there. That read is a sync, so
// only the checking mode uses it; a normal run looks only at the logits it already reads.
#pragma once

#include <cstdint>
#include <string>

#include "engine/backend.h"
#include "engine/base/tensor.h"

namespace decodelab {

struct NonFiniteScan {
  int64_t count = 0;   // non-finite elements
  int64_t first = -1;  // row-major index (over the view's shape) of the first one
  float first_value = 0;
};

// Scans `count` contiguous host elements of a float dtype (I32 holds no non-finite value).
NonFiniteScan scan_non_finite(const void* data, DType dtype, int64_t count);

// Reads the elements a (possibly strided) view covers and scans them in the view's order.
// `read_id` is the op id the backend's device-to-host read runs under.
NonFiniteScan scan_device_tensor(Backend& backend, const Tensor& tensor, OpId read_id);

// "[0,17]": a row-major index of a view as one index per dim.
std::string index_string(const Tensor& tensor, int64_t flat_index);

// "nan", "inf", "-inf".
std::string non_finite_name(float value);

}  // namespace decodelab
