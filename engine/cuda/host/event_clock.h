// Where the CUDA-events timer places each op on the host clock. cudaEventElapsedTime
// gives float milliseconds between two events, and a float near 60 000 ms is 4 µs
// coarse: the size of a decode kernel. So nothing is measured from a distant anchor: an
// op's duration is the time between its own two events, and its begin is the time from
// the previous op's end (a short gap, exact to the nanosecond). The chain starts at an
// anchor event whose host time was measured; the timer renews the anchor when the stream
// is idle, which keeps the two clocks from drifting apart. Plain C++ (engine/cuda/host/),
// so the arithmetic is tested without a GPU.
#pragma once

#include <cstdint>

namespace decodelab::cuda {

class EventClock {
 public:
  struct Interval {
    int64_t begin_ns = 0;
    int64_t end_ns = 0;
  };

  // Starts a new chain at an anchor event recorded at host time `host_ns`.
  void anchor(int64_t host_ns) { chain_end_ns_ = host_ns; }
  // The next op in stream order: `gap_ms` from the chain's last event to the op's first
  // event, `duration_ms` from its first event to its last (0 for a marker). Returns its
  // host interval; its last event becomes the chain's last.
  Interval place(float gap_ms, float duration_ms);
  int64_t chain_end_ns() const { return chain_end_ns_; }

  // Milliseconds as cudaEventElapsedTime reports them, in whole nanoseconds.
  static int64_t nanoseconds(float milliseconds);

 private:
  int64_t chain_end_ns_ = 0;
};

}  // namespace decodelab::cuda
