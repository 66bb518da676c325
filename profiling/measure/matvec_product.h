// The measurement workload the bandwidth roof and the cache level both read: an fp16
// matrix-vector product y = x · Wᵀ over a weight [rows, 1024] of about a given size, x one
// row, on random data — the access pattern of a batch-1 decode step's matmuls.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/backend.h"
#include "engine/device_buffer.h"
#include "profiling/measure/op_timer.h"

namespace decodelab {

struct MatvecProduct {
  static constexpr int64_t kRow = 1024;  // K: elements per weight row

  DeviceBuffer weight, vector, product;
  Tensor w, x, y;

  // A weight of weight_bytes rounded down to whole rows (one row at least).
  MatvecProduct(Backend& backend, double weight_bytes, uint64_t seed) {
    const int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(weight_bytes) / (kRow * 2));
    weight = DeviceBuffer(backend, static_cast<size_t>(rows * kRow) * dtype_size(DType::F16));
    vector = DeviceBuffer(backend, kRow * dtype_size(DType::F16));
    product = DeviceBuffer(backend, static_cast<size_t>(rows) * dtype_size(DType::F16));
    fill_random(backend, weight.get(), DType::F16, static_cast<size_t>(rows * kRow), seed);
    fill_random(backend, vector.get(), DType::F16, kRow, seed + 1);
    w = Tensor::contiguous(weight.get(), DType::F16, {rows, kRow});
    x = Tensor::contiguous(vector.get(), DType::F16, {1, kRow});
    y = Tensor::contiguous(product.get(), DType::F16, {1, rows});
  }

  // What one product moves: the weight, the vector and the output.
  double bytes() const { return static_cast<double>(weight.bytes() + vector.bytes() + product.bytes()); }
  void enqueue(Backend& backend, OpId id) const { backend.matmul(x, w, y, id); }
};

}  // namespace decodelab
