// A kernel's loop over [0, count): on the OpenMP kernel threads when the work is worth
// it, else on the calling thread without entering OpenMP at all. The one non-obvious
// choice is that second branch: libgomp ends every region, a serialized one too
// (`#pragma omp parallel if (false)`), with a futex wake on its team's barrier — a system
// call that can cost more than a small op's whole work (an add of a thousand floats). A
// parallel region
// costs that wake and the threads' start and join on top (docs/prediction.md, "The
// parallel region").
#pragma once

#include <cstdint>

namespace decodelab::cpu {

// How a parallel loop shares its iterations out (OpenMP's schedule kinds, with a chunk
// for dynamic and guided).
struct LoopSchedule {
  enum class Kind { Static, Dynamic, Guided };
  Kind kind = Kind::Static;
  int64_t chunk = 1;
  static LoopSchedule dynamic(int64_t chunk) { return {Kind::Dynamic, chunk}; }
  static LoopSchedule guided(int64_t chunk) { return {Kind::Guided, chunk}; }
};

// body(i) for every i in [0, count), each once, in any order when `parallel`.
template <typename Body>
void parallel_for(bool parallel, int64_t count, Body&& body, LoopSchedule schedule = {}) {
  if (!parallel) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
  const int64_t chunk = schedule.chunk;
  switch (schedule.kind) {
    case LoopSchedule::Kind::Static:
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < count; ++i) body(i);
      break;
    case LoopSchedule::Kind::Dynamic:
#pragma omp parallel for schedule(dynamic, chunk)
      for (int64_t i = 0; i < count; ++i) body(i);
      break;
    case LoopSchedule::Kind::Guided:
#pragma omp parallel for schedule(guided, chunk)
      for (int64_t i = 0; i < count; ++i) body(i);
      break;
  }
}

}  // namespace decodelab::cpu
