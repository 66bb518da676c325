// The CUDA backend's launch planning that runs on the host (engine/cuda/host/), checked
// without a GPU: the argmax's chunks per row. (The attention's plans are checked through
// the decode loop in tests/test_graph_replay.cpp.)
#include <catch2/catch.hpp>

#include "engine/cuda/host/argmax_plan.h"

using namespace decodelab::cuda;

TEST_CASE("argmax plan: few rows split a large vocabulary into chunks that cover it", "[cuda_plans]") {
  for (int64_t rows : {int64_t{1}, int64_t{2}, kArgmaxSplitMaxRows}) {
    for (int64_t vocab : {int64_t{4096}, int64_t{32000}, int64_t{128256}, int64_t{1} << 20}) {
      INFO(rows << " rows, vocab " << vocab);
      const ArgmaxPlan plan = plan_argmax(rows, vocab);
      CHECK(plan.chunks > 1);
      CHECK(plan.chunks <= kArgmaxMaxChunks);
      CHECK(plan.chunk_length * plan.chunks >= vocab);          // every logit is in a chunk
      CHECK(plan.chunk_length * (plan.chunks - 1) < vocab);     // and no chunk is empty
      CHECK(plan.chunk_length >= kArgmaxMinChunkLength);
      // The partials fit the workspace the backend allocates once.
      CHECK(static_cast<size_t>(rows * plan.chunks) * (sizeof(float) + sizeof(int64_t)) <= argmax_workspace_bytes());
    }
  }
}

TEST_CASE("argmax plan: many rows or a small vocabulary keep one block per row", "[cuda_plans]") {
  CHECK(plan_argmax(kArgmaxSplitMaxRows + 1, 128256).chunks == 1);
  CHECK(plan_argmax(64, 128256).chunks == 1);
  CHECK(plan_argmax(1, kArgmaxMinChunkLength - 1).chunks == 1);
  CHECK(plan_argmax(1, 1).chunks == 1);
  CHECK(plan_argmax(1, 1).chunk_length == 1);
  CHECK(plan_argmax(0, 128256).chunks == 1);
}
