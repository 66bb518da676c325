// CPU rotary position embedding (rotate-half convention, as Hugging Face Llama), in place
// on q and k. Per row, cos and sin are computed in fp32 from angle = float(position) ·
// inv_freq[j] and rounded to each tensor's dtype; then, with every product and sum rounded
// to that dtype as eager torch does (identity for fp32):
//   out[j]       = round(round(x[j]·c) + round(-x[j+d/2]·s))
//   out[j + d/2] = round(round(x[j+d/2]·c) + round(x[j]·s))
#include <algorithm>
#include <cmath>

#include "engine/cpu/kernels/checks.h"
#include "engine/cpu/fan_out.h"
#include "engine/cpu/kernels/kernels.h"
#include "engine/cpu/kernels/parallel_for.h"
#include "engine/cpu/kernels/rope_angles.h"
#include "engine/cpu/kernels/scratch.h"
#include "engine/cpu/kernels/simd.h"

namespace decodelab::cpu {

namespace {

// Rotates every head of one row; cosines/sines hold half_dim values padded to kLanes.
void rotate_row(char* row, DType dtype, int64_t heads, int64_t head_dim, const float* cosines, const float* sines) {
  const int64_t half = head_dim / 2;
  const int64_t element = static_cast<int64_t>(dtype_size(dtype));
  const VFloat minus_one = vbroadcast(-1.0f);
  for (int64_t head = 0; head < heads; ++head) {
    char* base = row + head * head_dim * element;
    char* second = base + half * element;
    for (int64_t j = 0; j < half; j += kLanes) {
      const int count = static_cast<int>(std::min<int64_t>(kLanes, half - j));
      const VFloat x1 = vload_n(dtype, base, j, count);
      const VFloat x2 = vload_n(dtype, second, j, count);
      const VFloat c = vload(cosines + j);
      const VFloat s = vload(sines + j);
      const VFloat first_out = vadd(vround_to(dtype, vmul(x1, c)), vround_to(dtype, vmul(vmul(x2, minus_one), s)));
      const VFloat second_out = vadd(vround_to(dtype, vmul(x2, c)), vround_to(dtype, vmul(x1, s)));
      vstore_n(dtype, base, j, first_out, count);
      vstore_n(dtype, second, j, second_out, count);
    }
  }
}

}  // namespace

void check_rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int head_dim) {
  const char* op = "rope";
  require(head_dim > 0 && head_dim % 2 == 0, op,
          [&] { return "head_dim must be positive and even, got " + std::to_string(head_dim); });
  require_rank(q, 2, op, "q");
  require_rank(k, 2, op, "k");
  require_float(q, op, "q");
  require_float(k, op, "k");
  require_unit_inner_stride(q, op, "q");
  require_unit_inner_stride(k, op, "k");
  require(q.shape[1] % head_dim == 0, op, [&] {
    return "q width must be a multiple of head_dim " + std::to_string(head_dim) + ", got " + describe_tensor(q);
  });
  require(k.shape[1] % head_dim == 0, op, [&] {
    return "k width must be a multiple of head_dim " + std::to_string(head_dim) + ", got " + describe_tensor(k);
  });
  require(k.shape[0] == q.shape[0], op,
          [&] { return "q and k must have the same rows, got " + describe_tensor(q) + " and " + describe_tensor(k); });
  require_rank(positions, 1, op, "positions");
  require_dtype(positions, DType::I32, op, "positions");
  require(positions.shape[0] == q.shape[0], op, [&] {
    return "positions must be [M] = [" + std::to_string(q.shape[0]) + "], got " + describe_tensor(positions);
  });
  require_rank(inv_freq, 1, op, "inv_freq");
  require_dtype(inv_freq, DType::F32, op, "inv_freq");
  require_unit_inner_stride(inv_freq, op, "inv_freq");
  require(inv_freq.shape[0] == head_dim / 2, op, [&] {
    return "inv_freq must be [head_dim/2] = [" + std::to_string(head_dim / 2) + "], got " + describe_tensor(inv_freq);
  });
}

void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int head_dim) {
  const int64_t rows = q.shape[0];
  const int64_t half = head_dim / 2;
  const int64_t padded_half = round_up_to_lanes(half);
  const int64_t q_heads = q.shape[1] / head_dim;
  const int64_t k_heads = k.shape[1] / head_dim;
  const float* frequencies = inv_freq.as<const float>();
  const int32_t* position_data = positions.as<const int32_t>();
  auto position_of = [&](int64_t m) { return position_data[m * positions.strides[0]]; };
  // The angles of every position these rows reach, tabulated on the calling (stream) thread.
  // (The kernel threads read it through `table`: the name of a thread_local would be their own.)
  thread_local RopeAngles stream_angles;
  int32_t last = 0;
  for (int64_t m = 0; m < rows; ++m) last = std::max(last, position_of(m));
  stream_angles.cover(frequencies, half, padded_half, last);
  const RopeAngles& table = stream_angles;
  // Each thread's cos/sin rows rounded to q's and k's dtypes (padding lanes zero: rotate_row
  // loads whole vectors).
  parallel_for(rope_fans_out(rows, q.shape[1], k.shape[1]), rows, [&](int64_t m) {
    thread_local ScratchBuffer row_scratch;
    float* row_angles = row_scratch.floats(static_cast<size_t>(6 * padded_half));
    float* q_cos = row_angles;
    float* q_sin = row_angles + padded_half;
    float* k_cos = row_angles + 2 * padded_half;
    float* k_sin = row_angles + 3 * padded_half;
    const int32_t position = position_of(m);
    const float *cosines = nullptr, *sines = nullptr;
    if (!table.row(position, cosines, sines)) {  // past the table's cap: computed here
      float* direct = row_angles + 4 * padded_half;
      table.compute(position, direct, direct + padded_half);
      cosines = direct;
      sines = direct + padded_half;
    }
    for (int64_t j = 0; j < padded_half; j += kLanes) {
      const VFloat c = vload(cosines + j), s = vload(sines + j);
      vstore(q_cos + j, vround_to(q.dtype, c));
      vstore(q_sin + j, vround_to(q.dtype, s));
      vstore(k_cos + j, vround_to(k.dtype, c));
      vstore(k_sin + j, vround_to(k.dtype, s));
    }
    char* q_row = static_cast<char*>(q.data) + m * q.strides[0] * static_cast<int64_t>(dtype_size(q.dtype));
    char* k_row = static_cast<char*>(k.data) + m * k.strides[0] * static_cast<int64_t>(dtype_size(k.dtype));
    rotate_row(q_row, q.dtype, q_heads, head_dim, q_cos, q_sin);
    rotate_row(k_row, k.dtype, k_heads, head_dim, k_cos, k_sin);
  });
}

}  // namespace decodelab::cpu
