// Kernel-level CPU benchmarks: the batch-1 matvec at the lab-small shapes against the
// STREAM figures, the batched matmul (M = 1..512) against the FMA peak and OpenBLAS's
// sgemm, and the other decode ops at lab-small shapes.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/bench_report.h"
#include "bench/yardsticks.h"
#include "engine/backend.h"

namespace decodelab::bench {

// The engine's projections at lab-small's shapes (q/k/v and gate/up fused, as the forward
// pass runs them), then the lm_head.
struct ProjectionShape {
  int64_t k, n;
  const char* layer;
};
const std::vector<ProjectionShape>& lab_small_projections();

void bench_matvec(BenchReport& report, Backend& backend, const StreamFigures& stream);
void bench_matmul(BenchReport& report, Backend& backend, int threads, double fma_peak);
void bench_other_ops(BenchReport& report, Backend& backend);

}  // namespace decodelab::bench
