// Host stalls: the stretches of a trace in which the host thread was neither doing its work
// nor waiting on the device — it had lost its core. Read from the host timeline alone: an
// enqueue call that took longer than the trace's median enqueue by more than a threshold
// (an enqueue returns in well under a microsecond, its emulated host overhead included in
// the median; one that waits for room in a full queue waits while the device is busy),
// and a gap of more than the threshold between two consecutive host events inside one run
// (the engine's own host code between two enqueues takes microseconds). The analysis
// counts the device idle time they overlap (TimelineStats::host_stall_seconds): time the
// device waited for a host that was not running. On the CPU backend that is a host
// thread starved by the kernel threads when they take every core (docs/prediction.md,
// "Contention for cores"); the prediction model assumes a host with a core of its own.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "profiling/trace.h"

namespace decodelab {

class HostStalls {
 public:
  // The stalls of `trace` at least `threshold_seconds` long.
  HostStalls(const Trace& trace, double threshold_seconds);

  // The stalled host time within [begin_ns, end_ns), in seconds.
  double overlap_seconds(int64_t begin_ns, int64_t end_ns) const;
  // The stalls, sorted and disjoint, as [begin_ns, end_ns).
  const std::vector<std::pair<int64_t, int64_t>>& intervals() const { return intervals_; }

 private:
  std::vector<std::pair<int64_t, int64_t>> intervals_;
};

}  // namespace decodelab
