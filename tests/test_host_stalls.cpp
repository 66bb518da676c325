// Host stalls read from a hand-laid trace: an enqueue far longer than the trace's typical
// one, and a long gap between host events inside a run, count where the device sat idle
// meanwhile; a host waiting in a sync, a short gap and a gap outside every run do not.
#include <catch2/catch.hpp>

#include "profiling/model/analysis.h"
#include "profiling/model/host_stalls.h"
#include "tests/support/profiling_fixtures.h"

using namespace decodelab;

namespace {

constexpr int64_t kUs = 1000;  // ns per µs

OpDesc add(OpId id) { return decodelab::testing::elementwise_add(id, 64, DType::F32); }

// One run [0, 2000 µs], every enqueue 1 µs long but one:
//   ops 1-4:  enqueued back to back at 0-4 µs, run on the device at 10-50 µs
//   op 5:     its enqueue takes 301 µs (host 30-331): the device, free at 50 µs, waits until 335
//   op 6:     enqueued at host 500-501 after a 169 µs host gap: the device, free at 345, waits until 505
//   sync:     the host waits 520-900 µs in a synchronize, op 7 enqueued at 905: no stall (a wait)
//   op 8:     enqueued at 950, 44 µs after op 7 (below the 50 µs line): no stall
// then, after the run, a host gap of 1 ms before op 9 (outside every run): not counted.
Trace stalled_trace() {
  Trace trace;
  trace.metadata().backend = "cpu";
  trace.metadata().dtype = "fp32";
  trace.range_begin(RangeKind::Run, -1, 0);
  OpId id = 1;
  for (int i = 0; i < 4; ++i)
    trace.add_op(add(id++), i * kUs, i * kUs + kUs, (10 + 10 * i) * kUs, (20 + 10 * i) * kUs);
  trace.add_op(add(id++), 30 * kUs, 331 * kUs, 335 * kUs, 345 * kUs);
  trace.add_op(add(id++), 500 * kUs, 501 * kUs, 505 * kUs, 515 * kUs);
  trace.host_call(HostCall{HostCallKind::Synchronize, "synchronize", 520 * kUs, 900 * kUs, 0});
  trace.add_op(add(id++), 905 * kUs, 906 * kUs, 910 * kUs, 920 * kUs);
  trace.add_op(add(id++), 950 * kUs, 951 * kUs, 955 * kUs, 965 * kUs);
  trace.range_end(RangeKind::Run, -1, 2000 * kUs);
  trace.add_op(add(id++), 3000 * kUs, 3001 * kUs, 3005 * kUs, 3015 * kUs);
  return trace;
}

}  // namespace

TEST_CASE("host stalls: long enqueues and long host gaps in a run, not syncs or short gaps", "[analysis][host_stalls]") {
  const Trace trace = stalled_trace();
  const HostStalls stalls(trace, 50e-6);
  // The enqueue's part beyond the typical 1 µs, and the gap between op 5's enqueue and op 6's.
  REQUIRE(stalls.intervals().size() == 1);  // the two touch at 331 µs and merge
  CHECK(stalls.intervals()[0].first == 31 * kUs);
  CHECK(stalls.intervals()[0].second == 500 * kUs);
  CHECK(stalls.overlap_seconds(0, 40 * kUs) == Approx(9e-6));
  CHECK(stalls.overlap_seconds(100 * kUs, 200 * kUs) == Approx(100e-6));
  CHECK(stalls.overlap_seconds(600 * kUs, 3000 * kUs) == 0);
  CHECK(stalls.overlap_seconds(50 * kUs, 50 * kUs) == 0);

  const DeviceSpec device = decodelab::testing::synthetic_cpu_device();
  const RunAnalysis analysis = analyze(trace, &device);
  // Device idle 50-335 µs (all of it stalled) and 345-505 µs (stalled until 500): 285 + 155
  // µs. The idle across the sync (515-910) and before op 8 (920-955) held no stall; the 2 ms
  // before op 9 end outside the run.
  CHECK(analysis.timeline.host_stall_seconds == Approx(440e-6));
  CHECK(analysis.timeline.host_stalls == 2);
  CHECK(analysis.timeline.idle_seconds > analysis.timeline.host_stall_seconds);
  CHECK(analysis.host_stall_fraction() ==
        Approx(analysis.timeline.host_stall_seconds / analysis.timeline.device_seconds()));
}

TEST_CASE("host stalls: a trace whose host keeps up has none", "[analysis][host_stalls]") {
  Trace trace;
  trace.metadata().backend = "cpu";
  trace.range_begin(RangeKind::Run, -1, 0);
  for (OpId id = 1; id <= 100; ++id)
    trace.add_op(add(id), id * kUs, id * kUs + 500, (id + 2) * kUs, (id + 2) * kUs + 900);
  trace.range_end(RangeKind::Run, -1, 200 * kUs);
  const HostStalls stalls(trace, 50e-6);
  CHECK(stalls.intervals().empty());
  const DeviceSpec device = decodelab::testing::synthetic_cpu_device();
  CHECK(analyze(trace, &device).timeline.host_stall_seconds == 0);
}
