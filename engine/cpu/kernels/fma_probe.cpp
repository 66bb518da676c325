// The CPU's arithmetic roof probe: each OpenMP thread runs kChains independent vector FMA
// chains, all in registers, for a given number of rounds. kChains covers the FMA latency
// times the FMA units of current cores (4 cycles × 2 units = 8 in flight), so the loop is
// bound by FMA throughput alone — the most fp32 arithmetic the machine can do, which no
// matmul can beat. The one non-obvious choice: the chains' start values and multiplier
// come from a volatile, and their sum goes to one, so the compiler can neither fold the
// loop nor drop it.
#include "engine/cpu/kernels/kernels.h"
#include "engine/cpu/kernels/simd.h"

namespace decodelab::cpu {

namespace {

constexpr int kChains = 12;

volatile float probe_seed = 1.0f;
volatile float probe_sink = 0.0f;

}  // namespace

void fma_probe(int64_t rounds) {
#pragma omp parallel
  {
    const float seed = probe_seed;
    const VFloat multiplier = vbroadcast(seed * 0.999999f);
    const VFloat addend = vbroadcast(seed * 1e-7f);
    VFloat chains[kChains];
#pragma GCC unroll 16
    for (int chain = 0; chain < kChains; ++chain) chains[chain] = vbroadcast(seed + static_cast<float>(chain));
    for (int64_t round = 0; round < rounds; ++round) {
#pragma GCC unroll 16
      for (int chain = 0; chain < kChains; ++chain) chains[chain] = vfma(chains[chain], multiplier, addend);
    }
    VFloat total = chains[0];
    for (int chain = 1; chain < kChains; ++chain) total = vadd(total, chains[chain]);
    if (vsum(total) == 0.5f) probe_sink = 1.0f;  // practically never; the compiler cannot know
  }
}

double fma_probe_flops(int64_t rounds, int threads) {
  return 2.0 * kChains * kLanes * static_cast<double>(rounds) * threads;
}

}  // namespace decodelab::cpu
