// Host-side parallel loops (weight generation, dtype conversion on load) on short-lived
// std::threads that are joined before the call returns. The one non-obvious choice: the
// host thread never starts an OpenMP team of its own. The CPU backend's stream worker
// owns the process's only team, so neither libgomp's spin after each parallel region nor
// an OMP_WAIT_POLICY=active setting can leave a second team's idle threads spinning on
// the cores the kernels need (measured: with a host team and OMP_WAIT_POLICY=active,
// lab-small decode ran at half speed).
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace decodelab {

// Calls body(begin, end) over [0, count) split into contiguous ranges of at least
// `grain` items, one per hardware thread at most; the caller runs the first range.
// The first exception a range throws is rethrown after every range has finished.
template <typename Body>
void host_parallel_for(int64_t count, int64_t grain, Body&& body) {
  const int64_t hardware = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t ranges = std::clamp<int64_t>(count / std::max<int64_t>(1, grain), 1, hardware);
  if (ranges == 1) {
    body(int64_t{0}, count);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranges));
  auto run_range = [&](int64_t index) {
    try {
      body(count * index / ranges, count * (index + 1) / ranges);
    } catch (...) {
      errors[static_cast<size_t>(index)] = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  helpers.reserve(static_cast<size_t>(ranges - 1));
  for (int64_t index = 1; index < ranges; ++index) helpers.emplace_back(run_range, index);
  run_range(0);
  for (std::thread& helper : helpers) helper.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

}  // namespace decodelab
