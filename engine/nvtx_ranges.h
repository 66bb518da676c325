// NVTX ranges for the engine's structure (run, prefill, step, layer), so an Nsight
// Systems timeline reads like the model. Callable from any .cpp: in CUDA builds they
// push and pop NVTX ranges (engine/cuda/nvtx_ranges.cpp), in CPU builds they do nothing
// (engine/nvtx_ranges_stub.cpp). Pushes and pops must pair on the same thread.
#pragma once

namespace decodelab {

void nvtx_push(const char* name);
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
