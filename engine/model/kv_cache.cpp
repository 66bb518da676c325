// KV cache allocation and its layout-dependent strides.
#include "engine/model/kv_cache.h"

namespace decodelab {

KvCache::KvCache(Backend& backend, int layers, int sequences, int max_positions, int kv_heads, int head_dim,
                 DType dtype, KvLayout layout)
    : sequences_(sequences),
      max_positions_(max_positions),
      kv_heads_(kv_heads),
      head_dim_(head_dim),
      dtype_(dtype),
      layout_(layout) {
  const size_t per_layer = static_cast<size_t>(sequences) * max_positions * kv_heads * head_dim * dtype_size(dtype);
  keys_.reserve(layers);
  values_.reserve(layers);
  for (int layer = 0; layer < layers; ++layer) {
    keys_.emplace_back(backend, per_layer);
    values_.emplace_back(backend, per_layer);
  }
}

int64_t KvCache::bytes() const {
  return 2LL * static_cast<int64_t>(keys_.size()) * sequences_ * max_positions_ * kv_heads_ * head_dim_ *
         static_cast<int64_t>(dtype_size(dtype_));
}

Tensor KvCache::view(void* data) const {
  const int64_t S = sequences_, H = kv_heads_, L = max_positions_, D = head_dim_;
  switch (layout_) {
    case KvLayout::HeadMajor: return Tensor::strided(data, dtype_, {S, H, L, D}, {H * L * D, L * D, D, 1});
    case KvLayout::PositionMajor: return Tensor::strided(data, dtype_, {S, H, L, D}, {L * H * D, D, H * D, 1});
    case KvLayout::DimMajor: return Tensor::strided(data, dtype_, {S, H, L, D}, {H * D * L, D * L, 1, L});
  }
  return {};
}

}  // namespace decodelab
