// Bug: non-contiguous tensors.
//
// What real code does: keeps the KV cache in the layout the projections produce
// ([batch, position, head, dim]) and hands attention a transposed view. Either a
// `.contiguous()` hides in the attention path and copies the layer's whole cache every
// step (mode: copy), or the kernel reads the view as it is, with a large stride between
// consecutive elements of a head's vector (mode: strided; the head_dim axis is strided,
// as in a K-transposed view).
// What a profiler sees: copy kernels every step whose bytes grow with the cache (copy),
// or attention running far below its bandwidth roof — uncoalesced loads, many sectors
// per request on a GPU, wasted cache lines on a CPU (strided).
// The fix: store the cache in the layout attention reads ([batch, head, position, dim]),
// or make the tensor contiguous once, where it is produced, not every step.
#include "bugs/deviations.h"

namespace decodelab::bugs {

KvLayout kv_cache_layout(const BugSet& bugs) {
  return bugs.non_contiguous_mode == NonContiguousMode::Copy ? KvLayout::PositionMajor : KvLayout::DimMajor;
}

KeyValueViews keys_values_for_attention(Ops& ops, const BugSet& bugs, const Tensor& keys, const Tensor& values,
                                        int positions_used, void* contiguous_keys, void* contiguous_values) {
  if (bugs.non_contiguous_mode == NonContiguousMode::Strided) return {keys, values};  // read the view as is

  // .contiguous() on the used part of the transposed view: [S, kv_heads, used, head_dim].
  auto contiguous_copy = [&](Tensor cache, void* destination, const char* label) {
    cache.shape[2] = positions_used;
    Tensor copy = Tensor::contiguous(destination, cache.dtype, {cache.shape[0], cache.shape[1], positions_used,
                                                                cache.shape[3]});
    ops.copy(cache, copy, label);
    return copy;
  };
  return {contiguous_copy(keys, contiguous_keys, "contiguous"), contiguous_copy(values, contiguous_values, "contiguous")};
}

}  // namespace decodelab::bugs
