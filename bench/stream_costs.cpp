// Stream cost measurements (see stream_costs.h). The per-op cost is measured with a
// tiny op (an add of 1024 floats) so that what is left is the stream: the host's
// enqueue, the worker's pick-up and timing, and the OpenMP-free run of a small kernel.
#include "bench/stream_costs.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "bench/traced_run.h"
#include "engine/clock.h"
#include "engine/device_buffer.h"
#include "lab/run_metrics.h"

namespace decodelab::bench {

namespace {

struct Percentiles {
  double median = 0, p90 = 0;
  static Percentiles of(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return {values[values.size() / 2], values[values.size() * 9 / 10]};
  }
};

}  // namespace

void bench_stream_costs(BenchReport& report, Backend& backend, const Yardsticks& yardsticks) {
  DeviceBuffer buffer(backend, 1024 * sizeof(float));
  const Tensor small = Tensor::contiguous(buffer.get(), DType::F32, {1, 1024});
  OpId id = 1;
  std::vector<double> enqueue_us, per_op_us;
  for (int round = 0; round < 2; ++round) {  // the first round warms up
    enqueue_us.clear();
    per_op_us.clear();
    for (int batch = 0; batch < 50; ++batch) {
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
    const int64_t begin = now_ns();
    for (int i = 0; i < 200; ++i) backend.marker(id++);
    backend.synchronize();
    marker_us.push_back((now_ns() - begin) * 1e-3 / 200);
  }
  backend.take_timings();
  std::vector<double> awake, asleep;
  for (int i = 0; i < 2000; ++i) {
    const int64_t begin = now_ns();
    backend.marker(id++);
    backend.synchronize();
    awake.push_back((now_ns() - begin) * 1e-3);
  }
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(300));  // longer than the worker's spin
    const int64_t begin = now_ns();
    backend.marker(id++);
    backend.synchronize();
    asleep.push_back((now_ns() - begin) * 1e-3);
  }
  backend.take_timings();
  const Percentiles enqueue = Percentiles::of(enqueue_us), per_op = Percentiles::of(per_op_us),
                    per_marker = Percentiles::of(marker_us),
                    sync_awake = Percentiles::of(awake), sync_asleep = Percentiles::of(asleep);
  report.heading("the CPU stream's own costs");
  report.table({"measure", "median us", "p90 us"},
               {{"enqueue one op (add, 1024 fp32), host side", fixed(enqueue.median, 2), fixed(enqueue.p90, 2)},
                {"enqueue + dispatch + run, 200 queued adds, per op", fixed(per_op.median, 2), fixed(per_op.p90, 2)},
                {"enqueue + dispatch, 200 queued markers (no work), per op", fixed(per_marker.median, 2),
                 fixed(per_marker.p90, 2)},
                {"sync round trip (marker + synchronize), worker awake", fixed(sync_awake.median, 2),
                 fixed(sync_awake.p90, 2)},
                {"sync round trip, worker asleep", fixed(sync_asleep.median, 2), fixed(sync_asleep.p90, 2)}});

  // lab-tiny decode, batch 1: how much of a step the stream's costs could account for.
  LoadedScenario tiny(backend,
                      bench_scenario("quickstart", {"workload.requests=1", "workload.batch_size=1",
                                                    "workload.prompt_tokens=16", "workload.new_tokens=128"}),
                      std::nullopt);
  tiny.generate(nullptr);
  std::vector<double> step_us, ops_per_step, busy;
  for (int repeat = 0; repeat < 3; ++repeat) {
    const TracedGeneration traced = traced_generate(tiny, backend, yardsticks.spec());
    const PhaseStats* decode = traced.analysis.phase(Phase::Decode);
    if (!decode || decode->steps == 0) continue;
    step_us.push_back(median_of(traced.timing.step_ms) * 1e3);
    ops_per_step.push_back(static_cast<double>(decode->timeline.ops) / static_cast<double>(decode->steps));
    busy.push_back(decode->timeline.busy_fraction());
  }
  const double step = median_of(step_us), ops = median_of(ops_per_step);
  const double stream_share = step > 0 ? ops * per_marker.median / step : 0;
  report.table({"lab-tiny decode (fp32, batch 1)", "value"},
               {{"decode step, median", fixed(step, 1) + " us"},
                {"ops per step", fixed(ops, 0)},
                {"ops x (enqueue + dispatch of a marker) / step", percent(stream_share)},
                {"device busy share of the decode phase (trace)", percent(median_of(busy))}});
  report.section("stream_costs") = {{"enqueue_us", enqueue.median},
                                    {"enqueue_p90_us", enqueue.p90},
                                    {"per_op_us", per_op.median},
                                    {"per_op_p90_us", per_op.p90},
                                    {"per_marker_us", per_marker.median},
                                    {"sync_awake_us", sync_awake.median},
                                    {"sync_asleep_us", sync_asleep.median},
                                    {"lab_tiny_step_us", step},
                                    {"lab_tiny_ops_per_step", ops},
                                    {"lab_tiny_stream_share", stream_share},
                                    {"lab_tiny_device_busy_share", median_of(busy)}};
  report.check({"lab-tiny decode: device busy share of the decode phase", 100.0 * median_of(busy), 50, "%",
                "from the trace: the device runs ops, not waits for the stream, most of each step"});
  report.check({"lab-tiny decode: step time not spent on stream costs", 100.0 * (1.0 - stream_share), 50, "%",
                "1 - ops per step x measured per-marker stream cost / median step"});
}

}  // namespace decodelab::bench
