// End-to-end CPU benchmarks through the engine (random weights, the lab-small model):
//  - decode at batch 1 per dtype, each generation between two STREAM triad passes, so
//    that its GB/s is compared with the bandwidth the machine gave at that moment;
//  - the decode-batch sweep (batch 1..64): tokens/s, its growth, and the decode
//    matmuls' FLOP/s (from a trace) against the FMA peak;
//  - prefill of a 512-token prompt against the FMA peak.
#pragma once

#include "bench/bench_report.h"
#include "bench/yardsticks.h"
#include "engine/backend.h"

namespace decodelab::bench {

struct EndToEndOptions {
  int threads = 0;  // kernel threads (0 = every core), for the triad passes
  int rounds = 5;   // interleaved decode rounds
};

void bench_decode(BenchReport& report, Backend& backend, const EndToEndOptions& options);
void bench_batched_decode(BenchReport& report, Backend& backend, const Yardsticks& yardsticks);
void bench_prefill(BenchReport& report, Backend& backend, const Yardsticks& yardsticks);

}  // namespace decodelab::bench
