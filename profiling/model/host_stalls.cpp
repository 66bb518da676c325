// The host stalls of a trace (see host_stalls.h): built once from its enqueue calls, host
// calls and run ranges, sorted and merged; an overlap query clips the few it meets.
#include "profiling/model/host_stalls.h"

#include <algorithm>

namespace decodelab {

namespace {

// The run range holding `ns`, as its index among the sorted runs; -1 outside every run.
int run_holding(const std::vector<std::pair<int64_t, int64_t>>& runs, int64_t ns) {
  auto after = std::upper_bound(runs.begin(), runs.end(), ns,
                                [](int64_t value, const std::pair<int64_t, int64_t>& run) { return value < run.first; });
  if (after == runs.begin()) return -1;
  --after;
  return ns <= after->second ? static_cast<int>(after - runs.begin()) : -1;
}

}  // namespace

HostStalls::HostStalls(const Trace& trace, double threshold_seconds) {
  const int64_t threshold_ns = static_cast<int64_t>(threshold_seconds * 1e9);
  std::vector<std::pair<int64_t, int64_t>> events;  // every host event: enqueues and host calls
  std::vector<int64_t> enqueue_ns;
  for (const TraceOp& op : trace.ops()) {
    events.emplace_back(op.host_begin_ns, op.host_end_ns);
    enqueue_ns.push_back(op.host_end_ns - op.host_begin_ns);
  }
  for (const HostCall& call : trace.host_calls()) events.emplace_back(call.begin_ns, call.end_ns);
  if (events.empty()) return;
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (const TraceRange& range : trace.ranges())
    if (range.kind == RangeKind::Run && range.closed()) runs.emplace_back(range.begin_ns, range.end_ns);
  std::sort(runs.begin(), runs.end());

  std::vector<std::pair<int64_t, int64_t>> stalls;
  if (!enqueue_ns.empty()) {
    std::nth_element(enqueue_ns.begin(), enqueue_ns.begin() + enqueue_ns.size() / 2, enqueue_ns.end());
    const int64_t typical_ns = enqueue_ns[enqueue_ns.size() / 2];
    for (const TraceOp& op : trace.ops()) {
      if (op.host_end_ns - op.host_begin_ns > typical_ns + threshold_ns)
        stalls.emplace_back(op.host_begin_ns + typical_ns, op.host_end_ns);
    }
  }
  std::sort(events.begin(), events.end());
  int64_t busy_until = events.front().second;
  for (size_t i = 1; i < events.size(); ++i) {
    const int64_t next = events[i].first;
    if (next - busy_until > threshold_ns) {
      const int run = run_holding(runs, busy_until);
      if (run >= 0 && run == run_holding(runs, next)) stalls.emplace_back(busy_until, next);
    }
    busy_until = std::max(busy_until, events[i].second);
  }

  // Sorted and merged, so that overlaps count each stalled nanosecond once.
  std::sort(stalls.begin(), stalls.end());
  for (const auto& stall : stalls) {
    if (!intervals_.empty() && stall.first <= intervals_.back().second) {
      intervals_.back().second = std::max(intervals_.back().second, stall.second);
    } else {
      intervals_.push_back(stall);
    }
  }
}

double HostStalls::overlap_seconds(int64_t begin_ns, int64_t end_ns) const {
  if (end_ns <= begin_ns) return 0;
  // The first stall ending after begin_ns, then each one starting before end_ns, clipped.
  auto ends_by = [](const std::pair<int64_t, int64_t>& stall, int64_t value) { return stall.second <= value; };
  int64_t stalled = 0;
  for (auto stall = std::lower_bound(intervals_.begin(), intervals_.end(), begin_ns, ends_by);
       stall != intervals_.end() && stall->first < end_ns; ++stall) {
    stalled += std::min(end_ns, stall->second) - std::max(begin_ns, stall->first);
  }
  return stalled * 1e-9;
}

}  // namespace decodelab
