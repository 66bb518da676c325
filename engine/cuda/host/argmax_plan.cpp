// Argmax planning: chunks per row from the row count and the vocabulary (see the header).
#include "engine/cuda/host/argmax_plan.h"

#include <algorithm>

namespace decodelab::cuda {

ArgmaxPlan plan_argmax(int64_t rows, int64_t vocab) {
  ArgmaxPlan plan;
  plan.chunk_length = std::max<int64_t>(vocab, 1);
  if (rows < 1 || rows > kArgmaxSplitMaxRows) return plan;
  const int64_t wanted = std::clamp<int64_t>(vocab / kArgmaxMinChunkLength, 1, kArgmaxMaxChunks);
  if (wanted <= 1) return plan;
  plan.chunk_length = (vocab + wanted - 1) / wanted;
  plan.chunks = static_cast<int>((vocab + plan.chunk_length - 1) / plan.chunk_length);
  return plan;
}

}  // namespace decodelab::cuda
