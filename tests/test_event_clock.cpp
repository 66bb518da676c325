// The CUDA-events timer's clock arithmetic (engine/cuda/host/event_clock.h), without a
// GPU: a simulated device timeline in whole nanoseconds, read back the way
// cudaEventElapsedTime reports it (float milliseconds between two events). Deep into a
// long run, every op's duration and begin must still come out to the nanosecond.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/cuda/host/event_clock.h"

using decodelab::cuda::EventClock;

namespace {

// cudaEventElapsedTime: float milliseconds from one event's device time to another's.
float elapsed_ms(int64_t from_ns, int64_t to_ns) { return static_cast<float>(static_cast<double>(to_ns - from_ns) / 1e6); }

struct DeviceOp {
  int64_t begin_ns, end_ns;
};

// `count` ops of 3 µs with 1 µs gaps, the first `start_ns` after the anchor.
std::vector<DeviceOp> decode_kernels(int64_t anchor_ns, int64_t start_ns, int count) {
  std::vector<DeviceOp> ops;
  int64_t at = anchor_ns + start_ns;
  for (int i = 0; i < count; ++i) {
    ops.push_back({at, at + 3000 + (i % 7)});  // 3.000-3.006 µs, so rounding cannot hide an error
    at = ops.back().end_ns + 1000 + (i % 5);
  }
  return ops;
}

}  // namespace

TEST_CASE("event clock: 60 s into a run, floats from the anchor cannot resolve a kernel", "[event_clock]") {
  // Why the timer never measures from the anchor: one float ulp at 60 000 ms is ~3.9 µs.
  const double at_60s_ms = 60000.0;
  const double ulp_ms = std::nextafter(static_cast<float>(at_60s_ms), 1e9f) - static_cast<float>(at_60s_ms);
  CHECK(ulp_ms * 1e6 > 3000.0);
}

TEST_CASE("event clock: durations and gaps stay exact however long the run", "[event_clock]") {
  const int64_t anchor_device_ns = 5'000'000'000;  // the device's own clock: any origin
  const int64_t anchor_host_ns = 123'456'789'000;
  // The first op 1 ms after the anchor, then 100 000 decode-sized ops: the last ends ~0.4 s in;
  // and a chain starting 60 s after its anchor.
  for (int64_t start_ns : {int64_t{1'000'000}, int64_t{60'000'000'000}}) {
    INFO("first op " << start_ns << " ns after the anchor");
    const std::vector<DeviceOp> ops = decode_kernels(anchor_device_ns, start_ns, 100'000);
    EventClock clock;
    clock.anchor(anchor_host_ns);
    int64_t previous_end_device = anchor_device_ns;
    int64_t offset = 0;  // placed - true, the same for every op
    int64_t wrong_durations = 0, moved_begins = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
      const DeviceOp& op = ops[i];
      const EventClock::Interval placed =
          clock.place(elapsed_ms(previous_end_device, op.begin_ns), elapsed_ms(op.begin_ns, op.end_ns));
      previous_end_device = op.end_ns;
      const int64_t truth_begin = anchor_host_ns + (op.begin_ns - anchor_device_ns);
      if (i == 0) offset = placed.begin_ns - truth_begin;
      if (placed.end_ns - placed.begin_ns != op.end_ns - op.begin_ns) ++wrong_durations;
      if (placed.begin_ns - truth_begin != offset) ++moved_begins;
    }
    CHECK(wrong_durations == 0);
    CHECK(moved_begins == 0);
    // Only the first gap may be long; its float is off by at most half an ulp (~2 µs at 60 s).
    CHECK(std::abs(offset) <= (start_ns > 1'000'000'000 ? 2000 : 1));
    CHECK(clock.chain_end_ns() - offset == anchor_host_ns + (ops.back().end_ns - anchor_device_ns));
  }
}

TEST_CASE("event clock: a marker has no duration and a new anchor restarts the chain", "[event_clock]") {
  EventClock clock;
  clock.anchor(1000);
  const EventClock::Interval marker = clock.place(0.002f, 0.0f);
  CHECK(marker.begin_ns == 3000);
  CHECK(marker.end_ns == 3000);
  clock.anchor(50'000);
  const EventClock::Interval op = clock.place(0.0f, 0.0015f);
  CHECK(op.begin_ns == 50'000);
  CHECK(op.end_ns == 51'500);
  CHECK(EventClock::nanoseconds(0.0000004f) == 0);  // below half a nanosecond
}
