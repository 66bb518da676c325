// CPU-only builds: NVTX ranges are no-ops (CUDA builds use engine/cuda/nvtx_ranges.cpp).
#include "engine/events/nvtx_ranges.h"

#if !DECODELAB_HAVE_CUDA
namespace decodelab {

void nvtx_push(const char*) {}
void nvtx_push_range(RangeKind, int) {}
void nvtx_pop() {}

}  // namespace decodelab
#endif
