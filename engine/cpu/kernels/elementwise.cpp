// CPU elementwise ops: add, swiglu, cast, copy, and the int32 position helpers.
// Tensors of rank <= 4 with any strides are walked as rows along their last axis (one
// single row when every operand is contiguous), rows split into segments that the
// threads share. The one non-obvious choice: a row with a non-unit inner stride is
// gathered kLanes elements at a time into a vector and goes through the same vector
// arithmetic as a contiguous row, so an op's result never depends on the layout.
#include <algorithm>
#include <array>
#include <cstring>

#include "engine/cpu/kernels/checks.h"
#include "engine/cpu/fan_out.h"
#include "engine/cpu/kernels/kernels.h"
#include "engine/cpu/kernels/parallel_for.h"
#include "engine/cpu/kernels/simd.h"

namespace decodelab::cpu {

namespace {

constexpr int64_t kSegment = 16384;  // elements per unit of parallel work

// A tensor seen as rank 4 (leading axes of size 1 added).
struct Operand {
  char* data;
  DType dtype;
  std::array<int64_t, 4> strides;
};

template <size_t N>
struct Walk {
  std::array<int64_t, 4> shape;
  std::array<Operand, N> operands;
};

template <size_t N>
Walk<N> make_walk(const std::array<const Tensor*, N>& tensors) {
  Walk<N> walk{};
  const Tensor& first = *tensors[0];
  bool all_contiguous = true;
  for (const Tensor* tensor : tensors) all_contiguous = all_contiguous && tensor->is_contiguous();
  const int offset = 4 - first.rank;
  for (int axis = 0; axis < 4; ++axis) walk.shape[axis] = axis < offset ? 1 : first.shape[axis - offset];
  if (all_contiguous) walk.shape = {1, 1, 1, first.numel()};
  for (size_t i = 0; i < N; ++i) {
    const Tensor& tensor = *tensors[i];
    Operand& operand = walk.operands[i];
    operand.data = static_cast<char*>(tensor.data);
    operand.dtype = tensor.dtype;
    for (int axis = 0; axis < 4; ++axis) {
      operand.strides[axis] =
          all_contiguous ? (axis == 3 ? 1 : 0) : (axis < offset ? 0 : tensor.strides[axis - offset]);
    }
  }
  return walk;
}

// row(pointers, inner_strides, count): each operand's first element of a run of `count`
// elements along the last axis.
template <size_t N, typename RowFn>
void for_each_run(const Walk<N>& walk, RowFn&& row) {
  const int64_t rows = walk.shape[0] * walk.shape[1] * walk.shape[2];
  const int64_t inner = walk.shape[3];
  const int64_t segments = (inner + kSegment - 1) / kSegment;
  const int64_t units = rows * segments;
  parallel_for(elementwise_fans_out(rows * inner), units, [&](int64_t unit) {
    const int64_t r = unit / segments;
    const int64_t begin = (unit % segments) * kSegment;
    const int64_t index[3] = {r / (walk.shape[1] * walk.shape[2]), (r / walk.shape[2]) % walk.shape[1],
                              r % walk.shape[2]};
    std::array<char*, N> pointers;
    std::array<int64_t, N> inner_strides;
    for (size_t i = 0; i < N; ++i) {
      const Operand& operand = walk.operands[i];
      const int64_t element_offset = index[0] * operand.strides[0] + index[1] * operand.strides[1] +
                                     index[2] * operand.strides[2] + begin * operand.strides[3];
      pointers[i] = operand.data + element_offset * static_cast<int64_t>(dtype_size(operand.dtype));
      inner_strides[i] = operand.strides[3];
    }
    row(pointers, inner_strides, std::min(kSegment, inner - begin));
  });
}

// `count` (<= kLanes) elements at `stride` apart, widened; the rest of the lanes zero.
VFloat load_lanes(DType dtype, const char* base, int64_t index, int64_t stride, int count) {
  if (stride == 1) return vload_n(dtype, base, index, count);
  alignas(64) float lanes[kLanes] = {};
  for (int i = 0; i < count; ++i) lanes[i] = load_as_float(base, dtype, (index + i) * stride);
  return vload(lanes);
}

void store_lanes(DType dtype, char* base, int64_t index, int64_t stride, VFloat value, int count) {
  if (stride == 1) return vstore_n(dtype, base, index, value, count);
  alignas(64) float lanes[kLanes];
  vstore(lanes, value);
  for (int i = 0; i < count; ++i) store_from_float(base, dtype, (index + i) * stride, lanes[i]);
}

// The whole chunks of a run whose operands are all unit-stride and of dtype D, with the
// loads and stores inlined (the general path below dispatches on dtype and stride per
// vector); returns the elements done. The same lanes go through the same op.
template <DType D, size_t N, typename VectorOp>
int64_t map_unit_stride_chunks(const std::array<char*, N>& pointers, int64_t count, VectorOp& op) {
  const int64_t full = count / kLanes * kLanes;
  for (int64_t i = 0; i < full; i += kLanes) {
    VFloat inputs[N - 1];
    for (size_t k = 0; k + 1 < N; ++k) inputs[k] = vload_as<D>(pointers[k], i);
    vstore_as<D>(pointers[N - 1], i, op(inputs));
  }
  return full;
}

// out = op(inputs) lane-wise for float operands [inputs..., out]; op takes VFloat[N - 1].
template <size_t N, typename VectorOp>
void map_lanes(const std::array<const Tensor*, N>& tensors, VectorOp&& op) {
  const Walk<N> walk = make_walk(tensors);
  bool one_dtype = true;
  for (const Operand& operand : walk.operands) one_dtype = one_dtype && operand.dtype == walk.operands[0].dtype;
  for_each_run(walk, [&](const std::array<char*, N>& pointers, const std::array<int64_t, N>& strides, int64_t count) {
    bool unit_stride = true;
    for (int64_t stride : strides) unit_stride = unit_stride && stride == 1;
    int64_t first = 0;
    if (one_dtype && unit_stride) {
      switch (walk.operands[0].dtype) {
        case DType::F16: first = map_unit_stride_chunks<DType::F16>(pointers, count, op); break;
        case DType::BF16: first = map_unit_stride_chunks<DType::BF16>(pointers, count, op); break;
        default: first = map_unit_stride_chunks<DType::F32>(pointers, count, op); break;
      }
    }
    for (int64_t i = first; i < count; i += kLanes) {
      const int lanes = static_cast<int>(std::min<int64_t>(kLanes, count - i));
      VFloat inputs[N - 1];
      for (size_t k = 0; k + 1 < N; ++k)
        inputs[k] = load_lanes(walk.operands[k].dtype, pointers[k], i, strides[k], lanes);
      store_lanes(walk.operands[N - 1].dtype, pointers[N - 1], i, strides[N - 1], op(inputs), lanes);
    }
  });
}

void check_elementwise(const Tensor& tensor, const char* op, const char* name) {
  require(tensor.rank >= 1 && tensor.rank <= 4, op,
          [&] { return std::string(name) + " must have rank 1..4, got " + describe_tensor(tensor); });
  require(tensor.data != nullptr || tensor.numel() == 0, op, [&] { return std::string(name) + " has no data"; });
}

}  // namespace

void check_add(const Tensor& a, const Tensor& b, const Tensor& out) {
  const char* op = "add";
  check_elementwise(a, op, "a");
  check_elementwise(b, op, "b");
  check_elementwise(out, op, "out");
  require_float(a, op, "a");
  require_float(b, op, "b");
  require_float(out, op, "out");
  require_same_shape(a, out, op, "a", "out");
  require_same_shape(b, out, op, "b", "out");
}

void add(const Tensor& a, const Tensor& b, const Tensor& out) {
  map_lanes<3>({&a, &b, &out}, [](const VFloat* in) { return vadd(in[0], in[1]); });
}

void check_swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  const char* op = "swiglu";
  check_elementwise(gate, op, "gate");
  check_elementwise(up, op, "up");
  check_elementwise(out, op, "out");
  require_float(gate, op, "gate");
  require_float(up, op, "up");
  require_float(out, op, "out");
  require_same_shape(gate, out, op, "gate", "out");
  require_same_shape(up, out, op, "up", "out");
}

void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  const DType gate_dtype = gate.dtype;
  const VFloat one = vbroadcast(1.0f);
  const VFloat minus_one = vbroadcast(-1.0f);
  map_lanes<3>({&gate, &up, &out}, [&](const VFloat* in) {
    // silu(g) = g / (1 + e^-g), rounded to the gate's dtype as torch's act_fn output is.
    const VFloat silu = vdiv(in[0], vadd(one, vexp(vmul(in[0], minus_one))));
    return vmul(vround_to(gate_dtype, silu), in[1]);
  });
}

void check_cast(const Tensor& x, const Tensor& out) {
  const char* op = "cast";
  check_elementwise(x, op, "x");
  check_elementwise(out, op, "out");
  require_float(x, op, "x");
  require_float(out, op, "out");
  require_same_shape(x, out, op, "x", "out");
}

void cast(const Tensor& x, const Tensor& out) {
  map_lanes<2>({&x, &out}, [](const VFloat* in) { return in[0]; });
}

void check_copy(const Tensor& src, const Tensor& out) {
  const char* op = "copy";
  check_elementwise(src, op, "src");
  check_elementwise(out, op, "out");
  require_same_shape(src, out, op, "src", "out");
  require(src.dtype == out.dtype, op, [&] {
    return "src and out must share a dtype (cast converts), got " + describe_tensor(src) + " and " +
           describe_tensor(out);
  });
}

void copy(const Tensor& src, const Tensor& out) {
  const Walk<2> walk = make_walk<2>({&src, &out});
  const size_t element = dtype_size(src.dtype);
  for_each_run(walk, [&](const std::array<char*, 2>& pointers, const std::array<int64_t, 2>& strides, int64_t count) {
    if (strides[0] == 1 && strides[1] == 1) {
      std::memcpy(pointers[1], pointers[0], static_cast<size_t>(count) * element);
      return;
    }
    const int64_t from = strides[0] * static_cast<int64_t>(element);
    const int64_t to = strides[1] * static_cast<int64_t>(element);
    if (element == 2) {
      for (int64_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, pointers[0] + i * from, 2);
        std::memcpy(pointers[1] + i * to, &bits, 2);
      }
    } else {
      for (int64_t i = 0; i < count; ++i) {
        uint32_t bits;
        std::memcpy(&bits, pointers[0] + i * from, 4);
        std::memcpy(pointers[1] + i * to, &bits, 4);
      }
    }
  });
}

void check_positions(const Tensor& positions, const char* op) {
  require_rank(positions, 1, op, "positions");
  require_dtype(positions, DType::I32, op, "positions");
}

void fill_positions(const Tensor& out, int start, int period) {
  int32_t* data = out.as<int32_t>();
  for (int64_t m = 0; m < out.shape[0]; ++m) data[m * out.strides[0]] = start + static_cast<int32_t>(m % period);
}

void advance_positions(const Tensor& positions) {
  int32_t* data = positions.as<int32_t>();
  for (int64_t m = 0; m < positions.shape[0]; ++m) data[m * positions.strides[0]] += 1;
}

}  // namespace decodelab::cpu
