// What a backend's stream itself costs, measured on the host clock: enqueueing an op, an
// op's turn on the device when ops queue up (with a tiny op and with a marker), a sync's
// round trip with the device awake and asleep, a small device-to-host read — the read
// the host_sync bug makes — and, on the CPU, what a kernel's fan-out to its threads adds.
// One measurement serves the bench (its stream table) and the roofs' cache (the fixed
// costs the prediction model adds to the roofline).
#pragma once

#include <functional>

#include "engine/backend.h"
#include "profiling/device_spec.h"

namespace decodelab {

struct StreamCosts {
  double enqueue_us = 0;        // host time of one enqueue (an add of 1024 fp32), median
  double enqueue_p90_us = 0;
  double per_op_us = 0;         // 200 queued adds: enqueue to finish, per op, median over batches
  double per_op_p90_us = 0;
  double per_marker_us = 0;     // the same with markers (no work at all)
  // 200 queued ops that each fan out to every kernel thread and do no work (an FMA probe
  // of one round), per op, median over batches; 0 where the backend has no such op.
  double per_parallel_op_us = 0;
  double per_parallel_op_p90_us = 0;
  double sync_awake_us = 0;     // marker + synchronize, the device polling for work
  double sync_awake_p90_us = 0;
  double sync_asleep_us = 0;    // the same after the device went to sleep (300 µs idle)
  double read_round_trip_us = 0;      // a 4-byte read into pageable memory, idle device, median
  double read_round_trip_p90_us = 0;

  // A parallel region's cost beyond a tiny op's turn: per_parallel_op_us - per_op_us
  // (never below 0), 0 where not measured.
  double parallel_region_us() const;

  // What the prediction model adds to each op and read: launch = one enqueue, per-op
  // overhead = a queued tiny op's turn, parallel region = parallel_region_us() for each
  // region an op's kernel opens, round trip = the small read (at least launch + per-op
  // overhead, so that the model's parts add up to it).
  FixedCosts fixed_costs(const std::string& source) const;
};

// `checkpoint` (may be empty) is called between batches, with nothing queued: it throws to
// abandon the measurement (thousands of synced ops take tens of seconds on a busy machine).
StreamCosts measure_stream_costs(Backend& backend, const std::function<void()>& checkpoint = {});

}  // namespace decodelab
