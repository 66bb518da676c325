// The shape of a generation as a trace shows it: runs (one per timed repeat) → request
// groups → passes (the prefill and each decode step) → the ops and host calls issued in
// each pass, with the layer each one was issued in. Diagnosis reads this outline; it is
// built from the ranges and host timestamps alone, so it works the same on a recorded
// trace and on one read back from a Chrome trace file.
// Non-obvious choice: an op or host call belongs to the range whose host interval holds
// its host begin time (enqueue time), not its device time — a range says what the host
// code was doing, and the device may run that work much later.
#pragma once

#include <cstdint>
#include <vector>

#include "profiling/trace.h"

namespace decodelab {

struct PassOutline {
  bool prefill = false;        // else a decode step
  int step = -1;               // the step range's index (decode steps only)
  int64_t begin_ns = 0;        // host interval of the range
  int64_t end_ns = 0;
  std::vector<size_t> ops;     // indices into Trace::ops(), in enqueue order
  std::vector<int> op_layers;  // per entry of `ops`: the layer range's index, -1 outside layers
  std::vector<size_t> calls;   // indices into Trace::host_calls()
  std::vector<int> call_layers;

  double host_seconds() const { return static_cast<double>(end_ns - begin_ns) * 1e-9; }
};

struct GroupOutline {
  int index = -1;                     // the group range's index (-1: the trace had none)
  std::vector<PassOutline> passes;    // in host order: usually one prefill, then the steps
  std::vector<size_t> calls;          // every host call begun in the group, passes included
};

struct RunOutline {
  std::vector<GroupOutline> groups;
};

struct TraceOutline {
  std::vector<RunOutline> runs;

  size_t decode_steps() const;
};

// Missing levels are filled in: a trace with no run range is one run, a run with no group
// range is one group. Ops outside every pass (uploads, final reads, markers) are not in
// any pass; host calls outside passes still belong to their group when inside one.
TraceOutline outline_trace(const Trace& trace);

}  // namespace decodelab
