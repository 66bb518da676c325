// Shared benchmark helpers (see bench_support.h).
#include "bench/bench_support.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <utility>

#include "engine/base/errors.h"

#include "engine/model/weights.h"

namespace decodelab::bench {

namespace {
constexpr size_t kStreamBytes = size_t{256} << 20;  // bytes a matmul measurement cycles through
}

int exit_code_of(const std::function<int()>& body) {
  try {
    return body();
  } catch (const ResourceError& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  } catch (const InputError& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

TimedSamples timed(std::vector<double> seconds) { return TimedSamples::of(std::move(seconds), 0.3); }

void fill_random(Backend& backend, void* device, DType dtype, size_t count, uint32_t seed) {
  fill_uniform(Tensor::contiguous(device, dtype, {static_cast<int64_t>(count)}), backend, seed, 0.05f / std::sqrt(3.0f));
}

WeightCopies make_weight_copies(Backend& backend, DType dtype, int64_t n, int64_t k) {
  WeightCopies copies;
  const size_t bytes = static_cast<size_t>(n * k) * dtype_size(dtype);
  const size_t count = std::max<size_t>(2, (kStreamBytes + bytes - 1) / bytes);
  for (size_t i = 0; i < count; ++i) {
    copies.buffers.emplace_back(backend, bytes);
    fill_random(backend, copies.buffers.back().get(), dtype, static_cast<size_t>(n * k), static_cast<uint32_t>(i + 1));
    copies.views.push_back(Tensor::contiguous(copies.buffers.back().get(), dtype, {n, k}));
  }
  return copies;
}

TimedSamples time_matmul(Backend& backend, const Tensor& x, const WeightCopies& weights, const Tensor& out, int passes) {
  OpId id = 1;
  for (const Tensor& weight : weights.views) backend.matmul(x, weight, out, id++);  // warm-up
  backend.synchronize();
  backend.take_timings();
  for (int pass = 0; pass < passes; ++pass)
    for (const Tensor& weight : weights.views) backend.matmul(x, weight, out, id++);
  backend.synchronize();
  std::vector<double> seconds;
  for (const OpTiming& timing : backend.take_timings()) seconds.push_back((timing.end_ns - timing.begin_ns) * 1e-9);
  return timed(std::move(seconds));
}

}  // namespace decodelab::bench
