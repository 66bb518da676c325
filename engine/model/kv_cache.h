// The preallocated KV cache: per layer one K and one V buffer for `sequences` x
// `max_positions` positions. The layout is a choice (the fixed path keeps each head's
// positions contiguous; the non_contiguous bug chooses the others), so every consumer
// goes through key(layer)/value(layer): views [sequences, kv_heads, positions, head_dim]
// whose strides say where each element really lives.
#pragma once

#include <vector>

#include "engine/device_buffer.h"
#include "engine/base/saturating.h"
#include "engine/base/tensor.h"

namespace decodelab {

enum class KvLayout {
  HeadMajor,      // [seq, kv_head, position, dim]: what attention wants (fixed path)
  PositionMajor,  // [seq, position, kv_head, dim]: projections appended as they come
  DimMajor,       // [seq, kv_head, dim, position]: a transposed view, head_dim strided
};

class KvCache {
 public:
  KvCache() = default;
  KvCache(Backend& backend, int layers, int sequences, int max_positions, int kv_heads, int head_dim, DType dtype,
          KvLayout layout);

  Tensor key(int layer) const { return view(keys_[layer].get()); }
  Tensor value(int layer) const { return view(values_[layer].get()); }
  int sequences() const { return sequences_; }
  int max_positions() const { return max_positions_; }
  KvLayout layout() const { return layout_; }
  int64_t bytes() const;

  // K and V bytes of the whole cache (saturating: absurd sizes plan as "too large", never wrap).
  static int64_t bytes_needed(int64_t layers, int64_t sequences, int64_t max_positions, int64_t kv_heads,
                              int64_t head_dim, DType dtype) {
    return saturating_mul(2, layers, sequences, max_positions, kv_heads, head_dim,
                          static_cast<int64_t>(dtype_size(dtype)));
  }

 private:
  Tensor view(void* data) const;

  std::vector<DeviceBuffer> keys_;
  std::vector<DeviceBuffer> values_;
  int sequences_ = 0;
  int max_positions_ = 0;
  int kv_heads_ = 0;
  int head_dim_ = 0;
  DType dtype_ = DType::F32;
  KvLayout layout_ = KvLayout::HeadMajor;
};

}  // namespace decodelab
