// CPU RMSNorm, as Hugging Face's LlamaRMSNorm computes it in eager mode: the mean of
// squares and its reciprocal root in fp32, n = round_to(x dtype, x·r), then
// out = round_to(out dtype, w·n). The sum of squares is one vector accumulator per row
// reduced by vsum, so a row's result never depends on how many rows share the call.
#include <algorithm>
#include <cmath>

#include "engine/cpu/kernels/checks.h"
#include "engine/cpu/fan_out.h"
#include "engine/cpu/kernels/kernels.h"
#include "engine/cpu/kernels/parallel_for.h"
#include "engine/cpu/kernels/simd.h"

namespace decodelab::cpu {

void check_rmsnorm(const Tensor& x, const Tensor& weight, const Tensor& out) {
  const char* op = "rmsnorm";
  require_rank(x, 2, op, "x");
  require_rank(weight, 1, op, "weight");
  require_rank(out, 2, op, "out");
  require_float(x, op, "x");
  require_float(weight, op, "weight");
  require_float(out, op, "out");
  require_unit_inner_stride(x, op, "x");
  require_unit_inner_stride(weight, op, "weight");
  require_unit_inner_stride(out, op, "out");
  require_same_shape(x, out, op, "x", "out");
  require(weight.shape[0] == x.shape[1], op, [&] {
    return "weight must be [hidden] = [" + std::to_string(x.shape[1]) + "], got " + describe_tensor(weight);
  });
}

void rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  const int64_t rows = x.shape[0];
  const int64_t hidden = x.shape[1];
  const size_t x_size = dtype_size(x.dtype);
  const size_t out_size = dtype_size(out.dtype);
  parallel_for(rmsnorm_fans_out(rows, hidden), rows, [&](int64_t m) {
    const char* x_row = static_cast<const char*>(x.data) + m * x.strides[0] * static_cast<int64_t>(x_size);
    char* out_row = static_cast<char*>(out.data) + m * out.strides[0] * static_cast<int64_t>(out_size);
    VFloat squares = vzero();
    for (int64_t column = 0; column < hidden; column += kLanes) {
      const int count = static_cast<int>(std::min<int64_t>(kLanes, hidden - column));
      const VFloat value = vload_n(x.dtype, x_row, column, count);
      squares = vfma(value, value, squares);
    }
    const float mean = hidden > 0 ? vsum(squares) / static_cast<float>(hidden) : 0.0f;
    const VFloat inverse_rms = vbroadcast(1.0f / std::sqrt(mean + eps));
    for (int64_t column = 0; column < hidden; column += kLanes) {
      const int count = static_cast<int>(std::min<int64_t>(kLanes, hidden - column));
      const VFloat normalized = vround_to(x.dtype, vmul(vload_n(x.dtype, x_row, column, count), inverse_rms));
      const VFloat scaled = vmul(vload_n(weight.dtype, weight.data, column, count), normalized);
      vstore_n(out.dtype, out_row, column, scaled, count);
    }
  });
}

}  // namespace decodelab::cpu
