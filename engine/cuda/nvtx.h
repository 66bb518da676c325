// NVTX inside the CUDA backend: each op's launches sit in a range named as the op
// (matmul, attention, rmsnorm, ...), the same name as its file, trace event and report
// row. Header-only NVTX v3: without a profiler attached a push costs a few nanoseconds.
#pragma once

#include <nvtx3/nvToolsExt.h>

namespace decodelab::cuda {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace decodelab::cuda
