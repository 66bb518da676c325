// NVTX ranges for the engine's structure (run, group, prefill, step, layer), so an Nsight
// Systems timeline reads like the model and lines up with decodelab's own trace: each range
// carries the trace's name for it (range_name: "step 3", "layer 12"), and ncu can filter on
// them (--nvtx-include "regex:step [0-9]+/"). Callable from any .cpp: in CUDA builds they
// push and pop NVTX ranges (engine/cuda/nvtx_ranges.cpp), in CPU builds they do nothing
// (engine/events/nvtx_ranges_stub.cpp). Pushes and pops must pair on the same thread.
// Non-obvious choice: the name is formatted inside the CUDA build's push, never here, so a
// CPU build pays one empty call per range; with no tool attached NVTX itself costs a few ns.
#pragma once

#include "engine/events/event_sink.h"

namespace decodelab {

void nvtx_push(const char* name);
void nvtx_push_range(RangeKind kind, int index);
void nvtx_pop();

// A range for the lifetime of a scope.
class NvtxScope {
 public:
  explicit NvtxScope(const char* name) { nvtx_push(name); }
  ~NvtxScope() { nvtx_pop(); }
  NvtxScope(const NvtxScope&) = delete;
  NvtxScope& operator=(const NvtxScope&) = delete;
};

}  // namespace decodelab
