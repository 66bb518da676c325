// What the CPU backend's stream itself costs: enqueueing an op on the host, enqueue to
// finish per op when ops queue up, and a sync's round trip with the worker awake and
// asleep; then whether those costs dominate a small model's decode (lab-tiny).
#pragma once

#include "bench/bench_report.h"
#include "bench/yardsticks.h"
#include "engine/backend.h"

namespace decodelab::bench {

void bench_stream_costs(BenchReport& report, Backend& backend, const Yardsticks& yardsticks);

}  // namespace decodelab::bench
