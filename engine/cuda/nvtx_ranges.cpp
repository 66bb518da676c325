// CUDA builds: the engine's NVTX ranges (engine/nvtx_ranges.h) are real NVTX ranges.
#include "engine/nvtx_ranges.h"

#include <nvtx3/nvToolsExt.h>

namespace decodelab {

void nvtx_push(const char* name) { nvtxRangePushA(name); }
void nvtx_pop() { nvtxRangePop(); }

}  // namespace decodelab
