// One batch-1 decode step's matvecs against the STREAM triad, interleaved (issue 17): the
// lab-small projections of every layer plus the lm_head, each its own weights as in the
// engine, run back to back per dtype with a triad pass between dtypes, so each dtype's
// GB/s is a ratio to the bandwidth measured just before and after it, per layer shape.
// The one non-obvious choice: only the matmuls run (no attention, norms or host work), so
// a gap here is the matvec kernel's; a gap seen only in `decode` is the rest of the step.
#pragma once

#include "bench/bench_report.h"
#include "engine/backend.h"

namespace decodelab::bench {

void bench_matvec_step(BenchReport& report, Backend& backend, int threads, int rounds);

}  // namespace decodelab::bench
