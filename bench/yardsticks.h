// The machine's yardsticks, measured by the benchmark itself: STREAM-like bandwidth
// (copy, triad, and a read-only sum, each over arrays far larger than the caches, on
// the kernel threads' count) and the FMA peak (the backend's FMA probe). Targets are
// ratios to these, taken in the same run.
#pragma once

#include "bench/bench_report.h"
#include "engine/backend.h"
#include "profiling/device_spec.h"

namespace decodelab::bench {

// GB/s of one STREAM triad pass (a[i] = b[i] + 3·c[i], 3 × 128 MiB counted, as STREAM
// does), best of `passes`: the yardstick decode is compared with, measured between
// decode runs so both see the same machine.
double triad_gbs(int threads, int passes = 3);

struct StreamFigures {
  double copy_gbs = 0, triad_gbs = 0, read_gbs = 0;  // best of the repeats
  double copy_median_gbs = 0, triad_median_gbs = 0, read_median_gbs = 0;
};
// Copy, triad and read-only sum; prints the section and fills its JSON.
StreamFigures bench_stream(BenchReport& report, int threads);

// FMA peak in FLOP/s (best of 5 probes of ~0.05 s); prints and records it.
double bench_fma_peak(BenchReport& report, Backend& backend);

// Both yardsticks, and the roofs a trace of this run is analysed against: bandwidth the
// fastest STREAM figure, every dtype's compute roof the FMA peak.
struct Yardsticks {
  StreamFigures stream;
  double fma_peak = 0;  // FLOP/s
  DeviceSpec spec() const;
};

}  // namespace decodelab::bench
