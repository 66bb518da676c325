// How many OpenMP parallel regions the CPU backend's kernel of a recorded op opens: the one
// figure the prediction model needs from the CPU kernels (each region is priced at its
// measured cost, profiling/measure/stream_costs.h). Declared here, apart from the kernels'
// thresholds (engine/cpu/fan_out.h, whose fan_out.cpp defines it), so that profiling counts
// regions without including a backend's insides.
#pragma once

#include "engine/events/event_sink.h"

namespace decodelab::cpu {

// The parallel regions the CPU kernel of a recorded op opens at its shapes (0 for ops
// that never fan out: markers, positions, copies to or from the host).
int parallel_regions(const OpDesc& op);

}  // namespace decodelab::cpu
