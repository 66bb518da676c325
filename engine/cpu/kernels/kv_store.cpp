// CPU KV-cache store: row m of k_new/v_new [M, kv_heads*head_dim] goes to sequence
// m / rows_per_sequence, position positions[m] of caches viewed as [sequences, kv_heads,
// positions, head_dim] with any strides (the engine's contiguous cache, or a transposed
// view when the non_contiguous bug is on). Positions are read from device memory, so
// they are checked on the worker before any thread writes.
#include <algorithm>
#include <cstring>

#include "engine/cpu/kernels/checks.h"
#include "engine/cpu/fan_out.h"
#include "engine/cpu/kernels/kernels.h"
#include "engine/cpu/kernels/parallel_for.h"
#include "engine/cpu/kernels/simd.h"

namespace decodelab::cpu {

namespace {

void check_cache(const Tensor& cache, const Tensor& fresh, const char* cache_name, const char* fresh_name) {
  const char* op = "kv_store";
  require_rank(cache, 4, op, cache_name);
  require_rank(fresh, 2, op, fresh_name);
  require_float(cache, op, cache_name);
  require_float(fresh, op, fresh_name);
  require_unit_inner_stride(fresh, op, fresh_name);
  require(fresh.shape[1] == cache.shape[1] * cache.shape[3], op, [&] {
    return std::string(fresh_name) + " must be [M, kv_heads*head_dim] with kv_heads, head_dim from " + cache_name +
           " " + describe_tensor(cache) + ", got " + describe_tensor(fresh);
  });
}

// One head's vector: head_dim values from a unit-stride source into a strided target.
void store_vector(const char* source, DType source_dtype, char* target, DType target_dtype, int64_t target_stride,
                  int64_t head_dim) {
  if (target_stride == 1 && source_dtype == target_dtype) {
    std::memcpy(target, source, static_cast<size_t>(head_dim) * dtype_size(source_dtype));
  } else if (target_stride == 1) {
    for (int64_t d = 0; d < head_dim; d += kLanes) {
      const int count = static_cast<int>(std::min<int64_t>(kLanes, head_dim - d));
      vstore_n(target_dtype, target, d, vload_n(source_dtype, source, d, count), count);
    }
  } else if (source_dtype == target_dtype) {
    const size_t element = dtype_size(source_dtype);
    for (int64_t d = 0; d < head_dim; ++d) {
      std::memcpy(target + d * target_stride * static_cast<int64_t>(element),
                  source + d * static_cast<int64_t>(element), element);
    }
  } else {
    for (int64_t d = 0; d < head_dim; ++d) {
      store_from_float(target, target_dtype, d * target_stride, load_as_float(source, source_dtype, d));
    }
  }
}

}  // namespace

void check_kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
                    const Tensor& positions, int rows_per_sequence) {
  const char* op = "kv_store";
  check_cache(k_cache, k_new, "k_cache", "k_new");
  check_cache(v_cache, v_new, "v_cache", "v_new");
  require_same_shape(k_cache, v_cache, op, "k_cache", "v_cache");
  require(k_new.shape[0] == v_new.shape[0], op, [&] { return "k_new and v_new must have the same rows"; });
  require_rank(positions, 1, op, "positions");
  require_dtype(positions, DType::I32, op, "positions");
  require(positions.shape[0] == k_new.shape[0], op, [&] {
    return "positions must be [M] = [" + std::to_string(k_new.shape[0]) + "], got " + describe_tensor(positions);
  });
  require(rows_per_sequence > 0, op,
          [&] { return "rows_per_sequence must be positive, got " + std::to_string(rows_per_sequence); });
  const int64_t rows = k_new.shape[0];
  require(rows == 0 || (rows - 1) / rows_per_sequence < k_cache.shape[0], op, [&] {
    return std::to_string(rows) + " rows at " + std::to_string(rows_per_sequence) +
           " per sequence need more than the " + std::to_string(k_cache.shape[0]) + " sequences of the cache";
  });
}

void kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache,
              const Tensor& positions, int rows_per_sequence) {
  const int64_t rows = k_new.shape[0];
  const int64_t kv_heads = k_cache.shape[1];
  const int64_t capacity = k_cache.shape[2];
  const int64_t head_dim = k_cache.shape[3];
  const int32_t* position_data = positions.as<const int32_t>();
  for (int64_t m = 0; m < rows; ++m) {
    const int32_t position = position_data[m * positions.strides[0]];
    if (position < 0 || position >= capacity) {
      fail_on_device("kv_store", "row " + std::to_string(m) + " has position " + std::to_string(position) +
                                     ", outside the cache's " + std::to_string(capacity) + " positions");
    }
  }
  const int64_t pairs = rows * kv_heads;
  parallel_for(kv_store_fans_out(2 * pairs * head_dim), pairs, [&](int64_t pair) {
    const int64_t m = pair / kv_heads;
    const int64_t head = pair % kv_heads;
    const int64_t sequence = m / rows_per_sequence;
    const int64_t position = position_data[m * positions.strides[0]];
    for (int which = 0; which < 2; ++which) {
      const Tensor& fresh = which == 0 ? k_new : v_new;
      const Tensor& cache = which == 0 ? k_cache : v_cache;
      const char* source = static_cast<const char*>(fresh.data) +
                           (m * fresh.strides[0] + head * head_dim) * static_cast<int64_t>(dtype_size(fresh.dtype));
      char* target = static_cast<char*>(cache.data) +
                     (sequence * cache.strides[0] + head * cache.strides[1] + position * cache.strides[2]) *
                         static_cast<int64_t>(dtype_size(cache.dtype));
      store_vector(source, fresh.dtype, target, cache.dtype, cache.strides[3], head_dim);
    }
  });
}

}  // namespace decodelab::cpu
