// The deviant steps of the five bugs, called by the engine at the points where real
// code goes wrong. Each is defined in bugs/<bug>.cpp, which opens with the lesson.
#pragma once

#include "bugs/bug_set.h"
#include "engine/model/kv_cache.h"
#include "engine/ops.h"
#include "engine/base/tensor.h"

namespace decodelab {

class Model;
struct ForwardPass;

namespace bugs {

// no_kv_cache: a decode step that re-runs the whole prefix (prompt + generated so far).
// `pass` describes the cached step it replaces; `prefix_positions` holds room for S*L rows.
void decode_step_without_cache(Model& model, Ops& ops, const ForwardPass& cached_step,
                               const Tensor& prefix_positions);

// non_contiguous: the cache layout the code keeps, and (mode copy) the .contiguous() copy
// made before attention. Returns the K/V views attention should read.
KvLayout kv_cache_layout(const BugSet& bugs);
struct KeyValueViews {
  Tensor keys;
  Tensor values;
};
KeyValueViews keys_values_for_attention(Ops& ops, const BugSet& bugs, const Tensor& keys, const Tensor& values,
                                        int positions_used, void* contiguous_keys, void* contiguous_values);

// host_sync: device values read on the host inside the loop.
void sync_after_layer(Ops& ops, const BugSet& bugs, const Tensor& hidden);
void sync_after_step(Ops& ops, const BugSet& bugs, const Tensor& tokens, int written_position, int sequences);

// fp32_ops: a norm or a projection computed in fp32 around casts.
void norm_in_fp32(Ops& ops, const Tensor& x, const Tensor& fp32_weight, float eps, const Tensor& out,
                  void* fp32_in, void* fp32_out, const char* label);
void project_in_fp32(Ops& ops, const Tensor& x, const Tensor& fp32_weight, const Tensor& out, void* fp32_in,
                     void* fp32_out, const char* label);

// sequential_generation: how many requests are decoded together.
int group_size(const BugSet& bugs, int batch_size);

}  // namespace bugs
}  // namespace decodelab
