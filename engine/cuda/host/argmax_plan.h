// How the CUDA argmax spreads a logits row over blocks. One block per row leaves a batch-1
// decode step on one multiprocessor scanning a whole vocabulary (128,256 logits for
// llama 3): its threads wait on one dependent load after another, tens of µs a step. Few
// rows are therefore split into chunks, one block each, whose (value, index) partials a
// second, one-warp kernel reduces; many rows keep one block per row (they fill the device).
// Plain C++ (engine/cuda/host/ is built in every configuration), so the planning is tested
// without a GPU; the workspace is fixed, allocated once with the backend, so a captured
// graph never needs to allocate.
#pragma once

#include <cstddef>
#include <cstdint>

namespace decodelab::cuda {

constexpr int64_t kArgmaxSplitMaxRows = 8;      // more rows: one block per row
constexpr int kArgmaxMaxChunks = 64;
constexpr int64_t kArgmaxMinChunkLength = 2048;  // shorter chunks cost more in the reduction than they save

struct ArgmaxPlan {
  int chunks = 1;             // blocks per row; 1 = one block per row, no workspace
  int64_t chunk_length = 0;   // logits per chunk (the last may be shorter)
};

ArgmaxPlan plan_argmax(int64_t rows, int64_t vocab);
// Bytes of the partials' workspace that covers every plan: a float and an int64 per chunk per row.
constexpr size_t argmax_workspace_bytes() {
  return static_cast<size_t>(kArgmaxSplitMaxRows) * kArgmaxMaxChunks * (sizeof(float) + sizeof(int64_t));
}

}  // namespace decodelab::cuda
