// CPU greedy sampling: tokens[r, positions[r] + 1] = argmax(logits[r, :]), first index on
// ties. NaN counts as the largest value, as in torch.argmax: a row holding NaN yields the
// index of its first NaN. One vector pass finds the maximum (NaN lanes are skipped but
// flagged), a second finds its first occurrence; the rare flagged row gets a scalar
// NaN scan (±inf also trips the flag, harmlessly).
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/cpu/kernels/checks.h"
#include "engine/cpu/fan_out.h"
#include "engine/cpu/kernels/kernels.h"
#include "engine/cpu/kernels/parallel_for.h"
#include "engine/cpu/kernels/simd.h"

namespace decodelab::cpu {

namespace {

template <DType D>
int64_t argmax_row(const void* row, int64_t count) {
  const int64_t full = count / kLanes * kLanes;
  VFloat max_lanes = vbroadcast(-std::numeric_limits<float>::infinity());
  VFloat nan_probe = vzero();  // x - x is NaN exactly when x is NaN or ±inf
  for (int64_t i = 0; i < full; i += kLanes) {
    const VFloat value = vload_as<D>(row, i);
    max_lanes = vmax(value, max_lanes);  // keeps max_lanes when value is NaN
    nan_probe = vadd(nan_probe, vsub(value, value));
  }
  float best = vmax_lanes(max_lanes);
  bool maybe_nan = std::isnan(vsum(nan_probe));
  for (int64_t i = full; i < count; ++i) {
    const float value = load_as_float(row, D, i);
    if (std::isnan(value))
      maybe_nan = true;
    else if (value > best)
      best = value;
  }
  if (maybe_nan) {
    for (int64_t i = 0; i < count; ++i)
      if (std::isnan(load_as_float(row, D, i))) return i;
  }
  const VFloat target = vbroadcast(best);
  for (int64_t i = 0; i < full; i += kLanes) {
    const int lane = vfirst_equal(vload_as<D>(row, i), target);
    if (lane >= 0) return i + lane;
  }
  for (int64_t i = full; i < count; ++i)
    if (load_as_float(row, D, i) == best) return i;
  return 0;  // every value is -inf
}

}  // namespace

void check_argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions) {
  const char* op = "argmax";
  require_rank(logits, 2, op, "logits");
  require_rank(tokens, 2, op, "tokens");
  require_rank(positions, 1, op, "positions");
  require_float(logits, op, "logits");
  require_dtype(tokens, DType::I32, op, "tokens");
  require_dtype(positions, DType::I32, op, "positions");
  require_unit_inner_stride(logits, op, "logits");
  require(logits.shape[1] > 0, op,
          [&] { return "logits must have at least one column, got " + describe_tensor(logits); });
  require(positions.shape[0] == logits.shape[0], op, [&] {
    return "positions must hold one entry per logits row (" + std::to_string(logits.shape[0]) + "), got " +
           describe_tensor(positions);
  });
  require(logits.shape[0] <= tokens.shape[0], op, [&] {
    return "tokens " + describe_tensor(tokens) + " has fewer sequences than logits rows " + describe_tensor(logits);
  });
}

void argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions) {
  const int64_t rows = logits.shape[0];
  const int64_t vocab = logits.shape[1];
  const int32_t* position_data = positions.as<const int32_t>();
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t position = position_data[r * positions.strides[0]];
    if (position < -1 || position + 1 >= tokens.shape[1]) {
      fail_on_device("argmax", "sequence " + std::to_string(r) + " at position " + std::to_string(position) +
                                   " has no room for its next token in a history of " +
                                   std::to_string(tokens.shape[1]) + " positions");
    }
  }
  const size_t element = dtype_size(logits.dtype);
  int32_t* token_data = tokens.as<int32_t>();
  parallel_for(argmax_fans_out(rows, vocab), rows, [&](int64_t r) {
    const void* row = static_cast<const char*>(logits.data) + r * logits.strides[0] * static_cast<int64_t>(element);
    int64_t best;
    switch (logits.dtype) {
      case DType::F16:
        best = argmax_row<DType::F16>(row, vocab);
        break;
      case DType::BF16:
        best = argmax_row<DType::BF16>(row, vocab);
        break;
      default:
        best = argmax_row<DType::F32>(row, vocab);
        break;
    }
    const int64_t next = position_data[r * positions.strides[0]] + 1;
    token_data[r * tokens.strides[0] + next * tokens.strides[1]] = static_cast<int32_t>(best);
  });
}

}  // namespace decodelab::cpu
