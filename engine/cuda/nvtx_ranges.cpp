// CUDA builds: the engine's NVTX ranges (engine/events/nvtx_ranges.h) are real NVTX ranges.
#include "engine/events/nvtx_ranges.h"

#include <nvtx3/nvToolsExt.h>

#include <string>

namespace decodelab {

void nvtx_push(const char* name) { nvtxRangePushA(name); }

// "layer 12" fits the string's inline buffer: no allocation per range.
void nvtx_push_range(RangeKind kind, int index) { nvtxRangePushA(range_name(kind, index).c_str()); }

void nvtx_pop() { nvtxRangePop(); }

}  // namespace decodelab
