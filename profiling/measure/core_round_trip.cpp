// The core-to-core round trip (see core_round_trip.h): a flag in its own cache line,
// odd values written by this thread and even ones by the helper, so that each side waits
// for the other's write to arrive before it writes the next.
#include "profiling/measure/core_round_trip.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "profiling/model/statistics.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define DECODELAB_PROBE_RELAX() _mm_pause()
#else
#define DECODELAB_PROBE_RELAX() std::this_thread::yield()
#endif

namespace decodelab {

namespace {

constexpr int kBatches = 21;
constexpr int kRoundTripsPerBatch = 500;
// Longest a side waits for the other before the probe gives up (a helper without a CPU).
constexpr std::chrono::milliseconds kBudget{200};

struct alignas(64) Flag {
  std::atomic<long> value{0};
};

}  // namespace

double measure_core_round_trip_ns() {
  if (std::thread::hardware_concurrency() < 2) return 0.0;
  Flag flag;
  std::atomic<bool> abandon{false};
  const long total = static_cast<long>(kBatches) * kRoundTripsPerBatch;
  using Clock = std::chrono::steady_clock;
  // Waits until the flag holds `expected`; false when the budget ran out or the other side gave up.
  auto wait_for = [&](long expected) {
    const Clock::time_point begin = Clock::now();
    for (int spin = 0;; ++spin) {
      if (flag.value.load(std::memory_order_acquire) == expected) return true;
      if (abandon.load(std::memory_order_relaxed)) return false;
      if ((spin & 1023) == 1023 && Clock::now() - begin > kBudget) {
        abandon.store(true);
        return false;
      }
      DECODELAB_PROBE_RELAX();
    }
  };
  std::thread helper([&] {
    for (long i = 0; i < total; ++i) {
      if (!wait_for(2 * i + 1)) return;
      flag.value.store(2 * i + 2, std::memory_order_release);
    }
  });
  std::vector<double> batch_ns;
  for (int batch = 0; batch < kBatches && !abandon.load(); ++batch) {
    const Clock::time_point begin = Clock::now();
    bool complete = true;
    for (int j = 0; j < kRoundTripsPerBatch && complete; ++j) {
      const long i = static_cast<long>(batch) * kRoundTripsPerBatch + j;
      flag.value.store(2 * i + 1, std::memory_order_release);
      complete = wait_for(2 * i + 2);
    }
    if (!complete) break;
    batch_ns.push_back(std::chrono::duration<double, std::nano>(Clock::now() - begin).count() / kRoundTripsPerBatch);
  }
  abandon.store(true);
  helper.join();
  // The first batch brings the helper onto its core; a partial measurement is no measurement.
  if (static_cast<int>(batch_ns.size()) < kBatches) return 0.0;
  batch_ns.erase(batch_ns.begin());
  return median_of(batch_ns);
}

std::string format_round_trip(double ns) { return std::to_string(std::llround(ns)) + " ns"; }

const char* core_distance(double round_trip_ns, double near_limit_ns) {
  return round_trip_ns > near_limit_ns ? "far" : "near";
}

}  // namespace decodelab
