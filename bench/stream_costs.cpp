// The stream's own costs as a table — measured by profiling/measure/stream_costs.h, the same
// measurement the roofs' cache keeps as the CPU's fixed costs — then whether they
// dominate lab-tiny's decode.
#include "bench/stream_costs.h"

#include <vector>

#include "bench/bench_support.h"
#include "bench/traced_run.h"
#include "lab/run/run_metrics.h"
#include "profiling/measure/stream_costs.h"

namespace decodelab::bench {

void bench_stream_costs(BenchReport& report, Backend& backend, const Yardsticks& yardsticks) {
  const StreamCosts costs = measure_stream_costs(backend);
  report.heading("the CPU stream's own costs");
  report.table({"measure", "median us", "p90 us"},
               {{"enqueue one op (add, 1024 fp32), host side", fixed(costs.enqueue_us, 2), fixed(costs.enqueue_p90_us, 2)},
                {"enqueue + dispatch + run, 200 queued adds, per op", fixed(costs.per_op_us, 2),
                 fixed(costs.per_op_p90_us, 2)},
                {"enqueue + dispatch, 200 queued markers (no work), per op", fixed(costs.per_marker_us, 2), "-"},
                {"enqueue + dispatch + fan-out to every kernel thread (no work), 200 queued, per op",
                 fixed(costs.per_parallel_op_us, 2), fixed(costs.per_parallel_op_p90_us, 2)},
                {"a parallel region beyond an add's turn (the model's fixed cost)", fixed(costs.parallel_region_us(), 2), "-"},
                {"sync round trip (marker + synchronize), worker awake", fixed(costs.sync_awake_us, 2),
                 fixed(costs.sync_awake_p90_us, 2)},
                {"sync round trip, worker asleep", fixed(costs.sync_asleep_us, 2), "-"},
                {"4-byte device-to-host read (pageable), worker awake", fixed(costs.read_round_trip_us, 2),
                 fixed(costs.read_round_trip_p90_us, 2)}});

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
  const double stream_share = step > 0 ? ops * costs.per_marker_us / step : 0;
  report.table({"lab-tiny decode (fp32, batch 1)", "value"},
               {{"decode step, median", fixed(step, 1) + " us"},
                {"ops per step", fixed(ops, 0)},
                {"ops x (enqueue + dispatch of a marker) / step", percent(stream_share)},
                {"device busy share of the decode phase (trace)", percent(median_of(busy))}});
  report.section("stream_costs") = {{"enqueue_us", costs.enqueue_us},
                                    {"enqueue_p90_us", costs.enqueue_p90_us},
                                    {"per_op_us", costs.per_op_us},
                                    {"per_op_p90_us", costs.per_op_p90_us},
                                    {"per_marker_us", costs.per_marker_us},
                                    {"per_parallel_op_us", costs.per_parallel_op_us},
                                    {"parallel_region_us", costs.parallel_region_us()},
                                    {"sync_awake_us", costs.sync_awake_us},
                                    {"sync_asleep_us", costs.sync_asleep_us},
                                    {"read_round_trip_us", costs.read_round_trip_us},
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
