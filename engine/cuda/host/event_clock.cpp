// The events timer's clock arithmetic (see the header).
#include "engine/cuda/host/event_clock.h"

#include <cmath>

namespace decodelab::cuda {

int64_t EventClock::nanoseconds(float milliseconds) {
  // Rounded, not truncated: a short interval converts to its exact nanosecond count.
  return std::llround(static_cast<double>(milliseconds) * 1e6);
}

EventClock::Interval EventClock::place(float gap_ms, float duration_ms) {
  Interval interval;
  interval.begin_ns = chain_end_ns_ + nanoseconds(gap_ms);
  interval.end_ns = interval.begin_ns + nanoseconds(duration_ms);
  chain_end_ns_ = interval.end_ns;
  return interval;
}

}  // namespace decodelab::cuda
