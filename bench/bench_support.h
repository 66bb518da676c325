// Shared pieces of the CPU benchmarks: repeated timings summarised as median and best,
// random device buffers, weight copies that force DRAM traffic, and timing one matmul
// by the device intervals the backend reports.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "engine/backend.h"
#include "engine/device_buffer.h"
#include "profiling/measure/roof_measure.h"

namespace decodelab::bench {

// A bench command's exit code: body()'s, or 2 after "error: ..." on stderr for an
// InputError or ResourceError (as decodelab's commands), 1 for any other exception.
int exit_code_of(const std::function<int()>& body);

// Repeated timings are summarised as profiling's TimedSamples: the median, and the best
// (the least disturbed run on a shared machine). A benchmark row is flagged noisy when its
// median is over 30% slower than its best.
TimedSamples timed(std::vector<double> seconds);
inline bool noisy(const TimedSamples& samples) { return samples.median > 1.3 * samples.best; }

double median_of(std::vector<double> values);

// Uniform values in [-0.05, 0.05) in `dtype`, uploaded to `device`.
void fill_random(Backend& backend, void* device, DType dtype, size_t count, uint32_t seed);

// Enough copies of an [n, k] weight (>= 256 MiB in all) that cycling through them
// streams every call's weights from DRAM, as decode does, rather than re-reading a
// matrix the 32 MiB L3 still holds.
struct WeightCopies {
  std::vector<DeviceBuffer> buffers;
  std::vector<Tensor> views;
};
WeightCopies make_weight_copies(Backend& backend, DType dtype, int64_t n, int64_t k);

// Device seconds of one matmul, cycling the weight copies `passes` times after a warm-up pass.
TimedSamples time_matmul(Backend& backend, const Tensor& x, const WeightCopies& weights, const Tensor& out, int passes);

}  // namespace decodelab::bench
