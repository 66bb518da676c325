// When the CPU kernels fan out to the OpenMP threads: parallel_for runs every index once
// under each schedule, and below a kernel's threshold runs on the calling thread outside
// any OpenMP region; parallel_regions counts the regions a recorded op's kernel opens, the
// count the prediction model prices (each threshold held to its arithmetic).
#include <catch2/catch.hpp>

#include <omp.h>

#include <atomic>
#include <vector>

#include "engine/cpu/fan_out.h"
#include "engine/cpu/kernels/parallel_for.h"
#include "tests/support/profiling_fixtures.h"

using namespace decodelab;
using namespace decodelab::cpu;

using testing::tensor;

namespace {

// An op as the engine records it, by name and shapes (the category does not matter here).
OpDesc kernel_op(const char* name, std::vector<TensorInfo> inputs, std::vector<TensorInfo> outputs) {
  return testing::op(0, name, "", OpCategory::Other, std::move(inputs), std::move(outputs));
}

}  // namespace

TEST_CASE("parallel_for runs every index once, in parallel only when asked", "[cpu][fan_out]") {
  omp_set_num_threads(2);
  for (const LoopSchedule schedule : {LoopSchedule{}, LoopSchedule::dynamic(1), LoopSchedule::guided(8)}) {
    for (const bool parallel : {false, true}) {
      std::vector<std::atomic<int>> visits(1000);
      std::atomic<int> team_size{0};
      std::atomic<bool> in_region{false};
      parallel_for(parallel, static_cast<int64_t>(visits.size()), [&](int64_t i) {
        ++visits[static_cast<size_t>(i)];
        team_size = omp_get_num_threads();
        if (omp_in_parallel()) in_region = true;
      }, schedule);
      for (const std::atomic<int>& count : visits) REQUIRE(count == 1);
      // Below the threshold the loop never enters OpenMP (no region, not even a serialized one).
      CHECK(in_region == parallel);
      CHECK(team_size == (parallel ? 2 : 1));
    }
  }
  parallel_for(true, 0, [](int64_t) { FAIL("no iterations"); });
}

TEST_CASE("parallel_regions counts each kernel's fan-outs at its threshold", "[cpu][fan_out]") {
  const DType f16 = DType::F16;
  // matmul x[M, K] · W[N, K]ᵀ: the product fans out above 2^16 multiply-adds, the widening of
  // x above 2^16 elements.
  const auto matmul = [](int64_t rows, int64_t n, int64_t k) {
    return parallel_regions(testing::matmul(0, rows, n, k, DType::F16));
  };
  CHECK(matmul(1, 64, 1024) == 0);      // 65536 multiply-adds: one thread
  CHECK(matmul(1, 65, 1024) == 1);
  CHECK(matmul(64, 4096, 1024) == 1);   // 65536 elements to widen: one thread
  CHECK(matmul(65, 4096, 1024) == 2);
  CHECK(matmul(0, 4096, 1024) == 0);    // nothing to do
  // Elementwise ops by their output's elements (2^15).
  const TensorInfo rows32 = tensor(f16, {32, 1024});
  CHECK(parallel_regions(kernel_op("add", {rows32, rows32}, {rows32})) == 0);
  CHECK(parallel_regions(kernel_op("swiglu", {}, {tensor(f16, {33, 1024})})) == 1);
  CHECK(parallel_regions(kernel_op("cast", {}, {tensor(DType::F32, {16, 2816})})) == 1);
  CHECK(parallel_regions(kernel_op("copy", {}, {tensor(f16, {8, 1024})})) == 0);
  // rmsnorm by rows × hidden (2^15), rope by rows × (q + k width) (2^14).
  CHECK(parallel_regions(kernel_op("rmsnorm", {tensor(f16, {32, 1024}), tensor(f16, {1, 1024})}, {})) == 0);
  CHECK(parallel_regions(kernel_op("rmsnorm", {tensor(f16, {33, 1024}), tensor(f16, {1, 1024})}, {})) == 1);
  CHECK(parallel_regions(kernel_op("rope", {tensor(f16, {8, 1024}), tensor(f16, {8, 1024})}, {})) == 0);
  CHECK(parallel_regions(kernel_op("rope", {tensor(f16, {9, 1024}), tensor(f16, {8, 1024})}, {})) == 1);
  // kv_store by the K and V elements written (2 × k_new, 2^15).
  CHECK(parallel_regions(kernel_op("kv_store", {tensor(f16, {16, 1024})}, {})) == 0);
  CHECK(parallel_regions(kernel_op("kv_store", {tensor(f16, {17, 1024})}, {})) == 1);
  // embedding by its output (2^16), argmax by its logits (2^16).
  CHECK(parallel_regions(kernel_op("embedding", {}, {tensor(f16, {64, 1024})})) == 0);
  CHECK(parallel_regions(kernel_op("embedding", {}, {tensor(f16, {65, 1024})})) == 1);
  CHECK(parallel_regions(kernel_op("argmax", {tensor(f16, {2, 32000})}, {})) == 0);
  CHECK(parallel_regions(kernel_op("argmax", {tensor(f16, {3, 32000})}, {})) == 1);
  // attention by its multiply-adds: 2 × query-key pairs × query width (2^15).
  OpDesc attention = kernel_op("attention", {tensor(f16, {1, 1024})}, {tensor(f16, {1, 1024})});
  attention.attention.query_key_pairs = 16;  // one row at position 15: 2·16·1024 = 32768
  CHECK(parallel_regions(attention) == 0);
  attention.attention.query_key_pairs = 17;
  CHECK(parallel_regions(attention) == 1);
  // Ops that never fan out.
  CHECK(parallel_regions(kernel_op("marker", {}, {})) == 0);
  const TensorInfo positions = tensor(DType::I32, {1, 1});
  CHECK(parallel_regions(kernel_op("advance_positions", {positions}, {positions})) == 0);
}
