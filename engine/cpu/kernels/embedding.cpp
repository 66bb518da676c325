// CPU embedding gather: out[m, :] = table[tokens[m / rows_per_sequence, positions[m]], :].
// Token ids come from the device-side token history (the previous step's argmax wrote
// them), so ids and positions are checked on the worker, before any thread copies.
#include <algorithm>
#include <cstring>

#include "engine/cpu/kernels/checks.h"
#include "engine/cpu/fan_out.h"
#include "engine/cpu/kernels/kernels.h"
#include "engine/cpu/kernels/parallel_for.h"
#include "engine/cpu/kernels/simd.h"

namespace decodelab::cpu {

namespace {
}

void check_embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence,
                     const Tensor& out) {
  const char* op = "embedding";
  require_rank(table, 2, op, "table");
  require_rank(tokens, 2, op, "tokens");
  require_rank(positions, 1, op, "positions");
  require_rank(out, 2, op, "out");
  require_float(table, op, "table");
  require_float(out, op, "out");
  require_dtype(tokens, DType::I32, op, "tokens");
  require_dtype(positions, DType::I32, op, "positions");
  require_unit_inner_stride(table, op, "table");
  require_unit_inner_stride(out, op, "out");
  require(out.shape[1] == table.shape[1], op, [&] {
    return "out must be [M, hidden] with the table's hidden size, got table " + describe_tensor(table) + " and out " +
           describe_tensor(out);
  });
  require(positions.shape[0] == out.shape[0], op, [&] {
    return "positions must be [M] = [" + std::to_string(out.shape[0]) + "], got " + describe_tensor(positions);
  });
  require(rows_per_sequence > 0, op,
          [&] { return "rows_per_sequence must be positive, got " + std::to_string(rows_per_sequence); });
  require(out.shape[0] == 0 || (out.shape[0] - 1) / rows_per_sequence < tokens.shape[0], op, [&] {
    return std::to_string(out.shape[0]) + " rows at " + std::to_string(rows_per_sequence) +
           " per sequence need more than the " + std::to_string(tokens.shape[0]) + " sequences of tokens";
  });
}

void embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence,
               const Tensor& out) {
  const int64_t rows = out.shape[0];
  const int64_t hidden = out.shape[1];
  const int32_t* token_data = tokens.as<const int32_t>();
  const int32_t* position_data = positions.as<const int32_t>();
  auto token_of = [&](int64_t m) {
    const int64_t position = position_data[m * positions.strides[0]];
    return token_data[(m / rows_per_sequence) * tokens.strides[0] + position * tokens.strides[1]];
  };
  for (int64_t m = 0; m < rows; ++m) {
    const int32_t position = position_data[m * positions.strides[0]];
    if (position < 0 || position >= tokens.shape[1]) {
      fail_on_device("embedding", "row " + std::to_string(m) + " has position " + std::to_string(position) +
                                      ", outside the token history's " + std::to_string(tokens.shape[1]) +
                                      " positions");
    }
    const int32_t token = token_of(m);
    if (token < 0 || token >= table.shape[0]) {
      fail_on_device("embedding", "row " + std::to_string(m) + " reads token id " + std::to_string(token) +
                                      ", outside the table's " + std::to_string(table.shape[0]) + " rows");
    }
  }
  const size_t table_element = dtype_size(table.dtype);
  const size_t out_element = dtype_size(out.dtype);
  parallel_for(embedding_fans_out(rows, hidden), rows, [&](int64_t m) {
    const char* source =
        static_cast<const char*>(table.data) + token_of(m) * table.strides[0] * static_cast<int64_t>(table_element);
    char* target = static_cast<char*>(out.data) + m * out.strides[0] * static_cast<int64_t>(out_element);
    if (table.dtype == out.dtype) {
      std::memcpy(target, source, static_cast<size_t>(hidden) * table_element);
      return;
    }
    for (int64_t column = 0; column < hidden; column += kLanes) {
      const int count = static_cast<int>(std::min<int64_t>(kLanes, hidden - column));
      vstore_n(out.dtype, target, column, vload_n(table.dtype, source, column, count), count);
    }
  });
}

}  // namespace decodelab::cpu
