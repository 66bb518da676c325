// Stream cost measurements (see stream_costs.h). The per-op cost is measured with a tiny
// op (an add of 1024 floats) so that what is left is the stream: the host's enqueue, the
// device's pick-up and timing, and the run of a small kernel.
#include "profiling/measure/stream_costs.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "engine/base/clock.h"
#include "engine/device_buffer.h"

namespace decodelab {

namespace {

struct Percentiles {
  double median = 0, p90 = 0;
  static Percentiles of(std::vector<double> values) {
    if (values.empty()) return {};
    std::sort(values.begin(), values.end());
    return {values[values.size() / 2], values[values.size() * 9 / 10]};
  }
};

}  // namespace

StreamCosts measure_stream_costs(Backend& backend, const std::function<void()>& checkpoint) {
  const auto check = [&] {
    if (checkpoint) checkpoint();
  };
  DeviceBuffer buffer(backend, 1024 * sizeof(float));
  const Tensor small = Tensor::contiguous(buffer.get(), DType::F32, {1, 1024});
  OpId id = 1;
  std::vector<double> enqueue_us, per_op_us;
  for (int round = 0; round < 2; ++round) {  // the first round warms up
    enqueue_us.clear();
    per_op_us.clear();
    for (int batch = 0; batch < 50; ++batch) {
      check();
      const int64_t begin = now_ns();
      for (int i = 0; i < 200; ++i) {
        const int64_t op_begin = now_ns();
        backend.add(small, small, small, id++);
        if (i % 16 == 0) enqueue_us.push_back((now_ns() - op_begin) * 1e-3);
      }
      backend.synchronize();
      per_op_us.push_back((now_ns() - begin) * 1e-3 / 200);
    }
    backend.take_timings();
  }
  // The same with markers (no work at all): what the stream alone costs per op.
  std::vector<double> marker_us;
  for (int batch = 0; batch < 50; ++batch) {
    check();
    const int64_t begin = now_ns();
    for (int i = 0; i < 200; ++i) backend.marker(id++);
    backend.synchronize();
    marker_us.push_back((now_ns() - begin) * 1e-3 / 200);
  }
  backend.take_timings();
  // The same with ops that fan out to every kernel thread and do nothing there: what a
  // parallel region adds (a backend without the probe enqueues nothing).
  std::vector<double> parallel_us;
  if (backend.fma_probe(1, id++) > 0) {
    backend.synchronize();
    for (int batch = 0; batch < 50; ++batch) {
      check();
      const int64_t begin = now_ns();
      for (int i = 0; i < 200; ++i) backend.fma_probe(1, id++);
      backend.synchronize();
      parallel_us.push_back((now_ns() - begin) * 1e-3 / 200);
    }
    backend.take_timings();
  }
  std::vector<double> awake, asleep, reads;
  for (int i = 0; i < 2000; ++i) {
    if (i % 100 == 0) check();
    const int64_t begin = now_ns();
    backend.marker(id++);
    backend.synchronize();
    awake.push_back((now_ns() - begin) * 1e-3);
  }
  int32_t value = 0;
  for (int i = 0; i < 2000; ++i) {
    if (i % 100 == 0) check();
    const int64_t begin = now_ns();
    backend.copy_to_host(&value, buffer.get(), sizeof value, /*pinned=*/false, id++);
    reads.push_back((now_ns() - begin) * 1e-3);
  }
  for (int i = 0; i < 200; ++i) {
    if (i % 20 == 0) check();
    std::this_thread::sleep_for(std::chrono::microseconds(300));  // longer than the CPU worker's spin
    const int64_t begin = now_ns();
    backend.marker(id++);
    backend.synchronize();
    asleep.push_back((now_ns() - begin) * 1e-3);
  }
  backend.take_timings();

  StreamCosts costs;
  const Percentiles enqueue = Percentiles::of(enqueue_us), per_op = Percentiles::of(per_op_us),
                    sync_awake = Percentiles::of(awake), read = Percentiles::of(reads);
  costs.enqueue_us = enqueue.median;
  costs.enqueue_p90_us = enqueue.p90;
  costs.per_op_us = per_op.median;
  costs.per_op_p90_us = per_op.p90;
  costs.per_marker_us = Percentiles::of(marker_us).median;
  const Percentiles parallel = Percentiles::of(parallel_us);
  costs.per_parallel_op_us = parallel.median;
  costs.per_parallel_op_p90_us = parallel.p90;
  costs.sync_awake_us = sync_awake.median;
  costs.sync_awake_p90_us = sync_awake.p90;
  costs.sync_asleep_us = Percentiles::of(asleep).median;
  costs.read_round_trip_us = read.median;
  costs.read_round_trip_p90_us = read.p90;
  return costs;
}

double StreamCosts::parallel_region_us() const {
  return per_parallel_op_us > 0 ? std::max(0.0, per_parallel_op_us - per_op_us) : 0.0;
}

FixedCosts StreamCosts::fixed_costs(const std::string& source) const {
  FixedCosts costs;
  costs.host_launch = enqueue_us * 1e-6;
  costs.op_overhead = per_op_us * 1e-6;
  costs.parallel_region = parallel_region_us() * 1e-6;
  costs.sync_round_trip = std::max(read_round_trip_us * 1e-6, costs.host_launch + costs.op_overhead);
  costs.source = source;
  return costs;
}

}  // namespace decodelab
