// STREAM-like bandwidth and the FMA peak (see yardsticks.h). The arrays are touched
// once before timing (first-touch page faults are not bandwidth), and each kernel splits
// its arrays into one contiguous range per thread, like STREAM's static schedule. The
// threads are host_parallel_for's short-lived ones, not an OpenMP team: a second team
// beside the stream worker's makes libgomp throttle its spinning, and the kernels' own
// parallel regions then wait on futex wake-ups (measured: lab-small decode 10-20% slower).
#include "bench/yardsticks.h"

#include <algorithm>
#include <vector>

#include "bench/bench_support.h"
#include "engine/base/clock.h"
#include "engine/cpu/kernels/simd.h"
#include "engine/base/host_parallel.h"
#include "profiling/measure/roof_measure.h"

namespace decodelab::bench {

namespace {

constexpr size_t kElements = size_t{32} << 20;  // 128 MiB of floats per array
constexpr double kArrayBytes = double(kElements) * sizeof(float);

// Runs body(begin, end) on `threads` contiguous ranges of the arrays at once.
template <typename Body>
void split(int threads, Body&& body) {
  host_parallel_for(threads, 1, [&](int64_t first, int64_t last) {
    for (int64_t part = first; part < last; ++part)
      body(kElements * static_cast<size_t>(part) / static_cast<size_t>(threads),
           kElements * static_cast<size_t>(part + 1) / static_cast<size_t>(threads));
  });
}

struct Arrays {
  std::vector<float> a, b, c;
  explicit Arrays(int threads) : a(kElements), b(kElements), c(kElements) {
    split(threads, [&](size_t begin, size_t end) {
      std::fill(a.begin() + begin, a.begin() + end, 1.0f);
      std::fill(b.begin() + begin, b.begin() + end, 2.0f);
      std::fill(c.begin() + begin, c.begin() + end, 0.5f);
    });
  }
};

template <typename Body>
double seconds_of(Body&& body) {
  const int64_t begin = now_ns();
  body();
  return (now_ns() - begin) * 1e-9;
}

double triad_pass(Arrays& arrays, int threads) {
  float* a = arrays.a.data();
  const float* b = arrays.b.data();
  const float* c = arrays.c.data();
  return seconds_of([&] {
    split(threads, [&](size_t begin, size_t end) {
#pragma GCC ivdep
      for (size_t i = begin; i < end; ++i) a[i] = b[i] + 3.0f * c[i];
    });
  });
}

// One set of arrays for the run (384 MiB), first touched on `threads` threads by the first
// caller; the bench uses one thread count throughout.
Arrays& run_arrays(int threads) {
  static Arrays arrays(threads);
  return arrays;
}

}  // namespace

double triad_gbs(int threads, int passes) {
  Arrays& arrays = run_arrays(threads);
  double best = 1e30;
  for (int pass = 0; pass < passes; ++pass) best = std::min(best, triad_pass(arrays, threads));
  return 3 * kArrayBytes / best / 1e9;
}

StreamFigures bench_stream(BenchReport& report, int threads) {
  Arrays& arrays = run_arrays(threads);
  std::vector<double> copy_s, triad_s, read_s;
  volatile float sink = 0;
  for (int repeat = 0; repeat < 7; ++repeat) {
    float* a = arrays.a.data();
    float* c = arrays.c.data();
    copy_s.push_back(seconds_of([&] {
      split(threads, [&](size_t begin, size_t end) {
#pragma GCC ivdep
        for (size_t i = begin; i < end; ++i) c[i] = a[i];
      });
    }));
    triad_s.push_back(triad_pass(arrays, threads));
    read_s.push_back(seconds_of([&] {
      split(threads, [&](size_t begin, size_t end) {
        // Four independent vector sums: one would be bound by the add's latency.
        cpu::VFloat sums[4] = {cpu::vzero(), cpu::vzero(), cpu::vzero(), cpu::vzero()};
        size_t i = begin;
        for (; i + 4 * cpu::kLanes <= end; i += 4 * cpu::kLanes)
          for (int s = 0; s < 4; ++s) sums[s] = cpu::vadd(sums[s], cpu::vload(a + i + s * cpu::kLanes));
        float total = cpu::vsum(cpu::vadd(cpu::vadd(sums[0], sums[1]), cpu::vadd(sums[2], sums[3])));
        for (; i < end; ++i) total += a[i];
        sink = total;
      });
    }));
  }
  (void)sink;
  const TimedSamples copy = timed(copy_s), triad = timed(triad_s), read = timed(read_s);
  StreamFigures figures;
  figures.copy_gbs = 2 * kArrayBytes / copy.best / 1e9;
  figures.triad_gbs = 3 * kArrayBytes / triad.best / 1e9;
  figures.read_gbs = kArrayBytes / read.best / 1e9;
  figures.copy_median_gbs = 2 * kArrayBytes / copy.median / 1e9;
  figures.triad_median_gbs = 3 * kArrayBytes / triad.median / 1e9;
  figures.read_median_gbs = kArrayBytes / read.median / 1e9;

  report.heading("STREAM-like bandwidth (" + std::to_string(threads) + " threads, 128 MiB arrays, 7 runs)",
                 "Bytes counted as STREAM counts them (copy 2 arrays, triad 3, read 1): the stores' write-allocate "
                 "reads are not counted, so a read-only stream can exceed the triad figure.");
  report.table({"kernel", "GB/s (median)", "GB/s (best)"},
               {{"copy", fixed(figures.copy_median_gbs), fixed(figures.copy_gbs)},
                {"triad", fixed(figures.triad_median_gbs), fixed(figures.triad_gbs)},
                {"read (sum)", fixed(figures.read_median_gbs), fixed(figures.read_gbs)}});
  report.section("stream") = {{"threads", threads},
                              {"copy_gbs", figures.copy_gbs},
                              {"triad_gbs", figures.triad_gbs},
                              {"read_gbs", figures.read_gbs},
                              {"copy_median_gbs", figures.copy_median_gbs},
                              {"triad_median_gbs", figures.triad_median_gbs},
                              {"read_median_gbs", figures.read_median_gbs}};
  return figures;
}

double bench_fma_peak(BenchReport& report, Backend& backend) {
  const FmaPeak peak = measure_fma_peak(backend);  // what `decodelab roofline --measure` takes too
  report.heading("FMA peak (the compute roof)",
                 "Independent fp32 FMA chains in registers on every kernel thread, run as an op on the backend's "
                 "stream: the most arithmetic this machine does. Half-precision matmuls run on the same FMAs "
                 "once their inputs are widened, so it is their roof too.");
  report.table({"GFLOP/s (median)", "GFLOP/s (best)"},
               {{fixed(peak.median_flops_per_s / 1e9), fixed(peak.flops_per_s / 1e9)}});
  report.section("fma_peak") = {{"gflops", peak.flops_per_s / 1e9}, {"median_gflops", peak.median_flops_per_s / 1e9}};
  return peak.flops_per_s;
}

DeviceSpec Yardsticks::spec() const {
  Roofs roofs;
  roofs.bandwidth = 1e9 * std::max({stream.copy_gbs, stream.triad_gbs, stream.read_gbs});
  roofs.fp32_flops = roofs.fp16_flops = roofs.bf16_flops = fma_peak;
  roofs.source = "measured by decodelab_bench_cpu in this run: fastest STREAM figure and the FMA peak";
  DeviceSpec spec;
  spec.name = "bench-yardsticks";
  spec.description = "this run's STREAM and FMA-peak measurements";
  spec.measured = roofs;
  return spec;
}

}  // namespace decodelab::bench
