// Analysis of a synthetic trace whose timeline is laid out by hand: device busy and
// idle per step, gaps, syncs, phases, category rows, limiters and the summary sentence.
#include <catch2/catch.hpp>

#include <algorithm>

#include "profiling/model/analysis.h"
#include "tests/support/profiling_fixtures.h"

using namespace decodelab;

namespace {

constexpr int64_t kUs = 1000;  // ns per µs

DeviceSpec test_device() {
  DeviceSpec spec;
  spec.name = "test";
  Roofs roofs;
  roofs.bandwidth = 100e9;
  roofs.fp32_flops = 1e12;
  roofs.fp16_flops = 4e12;
  roofs.source = "test";
  spec.measured = roofs;
  return spec;
}

// A matmul streaming a 4096 x 5000 fp16 weight (≈ 41 MB): 500 µs is ~82% of 100 GB/s.
OpDesc big_matmul(OpId id) { return decodelab::testing::matmul(id, 1, 4096, 5000, DType::F16, "down_proj"); }
OpDesc small_add(OpId id) { return decodelab::testing::elementwise_add(id, 64, DType::F32); }

// run [0, 10 ms]: prefill, then three decode steps.
//   prefill: matmul 500 µs, add 50 µs, back to back
//   step 0:  waits 540 µs for the host, then matmul + add back to back
//   step 1:  back to back; one synchronize on the host; a marker
//   step 2:  a 500 µs gap, matmul, a 5 µs hand-off (below the gap line), add; one op never timed
Trace synthetic_trace() {
  Trace trace;
  trace.metadata().backend = "cpu";
  trace.metadata().dtype = "fp16";
  OpId id = 1;
  trace.range_begin(RangeKind::Run, -1, 0);
  trace.range_begin(RangeKind::Prefill, -1, 100);
  trace.add_op(big_matmul(id++), 200, 300, 10 * kUs, 510 * kUs);
  trace.add_op(small_add(id++), 400, 450, 510 * kUs, 560 * kUs);
  trace.range_end(RangeKind::Prefill, -1, 1000 * kUs);

  trace.range_begin(RangeKind::Step, 0, 1000 * kUs);
  trace.add_op(big_matmul(id++), 1000 * kUs + 100, 1000 * kUs + 150, 1100 * kUs, 1600 * kUs);
  trace.add_op(small_add(id++), 1000 * kUs + 200, 1000 * kUs + 250, 1600 * kUs, 1650 * kUs);
  trace.range_end(RangeKind::Step, 0, 2000 * kUs);

  trace.range_begin(RangeKind::Step, 1, 2000 * kUs);
  trace.add_op(big_matmul(id++), 2000 * kUs + 100, 2000 * kUs + 150, 1650 * kUs, 2150 * kUs);
  trace.add_op(small_add(id++), 2000 * kUs + 200, 2000 * kUs + 250, 2150 * kUs, 2200 * kUs);
  trace.add_op(decodelab::testing::marker(id++), 2000 * kUs + 300, 2000 * kUs + 310, 2200 * kUs, 2200 * kUs);
  trace.host_call(HostCall{HostCallKind::Synchronize, "synchronize", 2500 * kUs, 2600 * kUs, 0});
  trace.range_end(RangeKind::Step, 1, 3000 * kUs);

  trace.range_begin(RangeKind::Step, 2, 3000 * kUs);
  trace.add_op(big_matmul(id++), 3000 * kUs + 100, 3000 * kUs + 150, 2700 * kUs, 3200 * kUs);
  trace.add_op(small_add(id++), 3000 * kUs + 200, 3000 * kUs + 250, 3205 * kUs, 3255 * kUs);
  trace.add_op(small_add(id++), 3000 * kUs + 300, 3000 * kUs + 350);  // no device time
  trace.range_end(RangeKind::Step, 2, 4000 * kUs);
  trace.host_call(HostCall{HostCallKind::DeviceToHost, "memcpy_dtoh", 4100 * kUs, 4200 * kUs, 64});  // after the steps
  trace.range_end(RangeKind::Run, -1, 10000 * kUs);
  return trace;
}

}  // namespace

TEST_CASE("timeline: busy, idle and gaps per step, idle belongs to the op that ends it", "[analysis]") {
  const Trace trace = synthetic_trace();
  const DeviceSpec device = test_device();

  const RunAnalysis analysis = analyze(trace, &device);

  REQUIRE(analysis.steps.size() == 3);
  const TimelineStats& step0 = analysis.steps[0].timeline;
  CHECK(step0.busy_seconds == Approx(550e-6));
  CHECK(step0.idle_seconds == Approx(540e-6));
  CHECK(step0.gaps == 1);
  CHECK(step0.span_seconds == Approx(1e-3));
  CHECK(analysis.steps[0].overhead_bound);  // 540 / 1090 idle

  const TimelineStats& step1 = analysis.steps[1].timeline;
  CHECK(step1.idle_seconds == Approx(0.0).margin(1e-12));
  CHECK(step1.gaps == 0);
  CHECK(step1.syncs == 1);
  CHECK(step1.ops == 2);  // the marker is not an op of the model
  CHECK_FALSE(analysis.steps[1].overhead_bound);

  const TimelineStats& step2 = analysis.steps[2].timeline;
  CHECK(step2.idle_seconds == Approx(505e-6));
  CHECK(step2.gaps == 1);  // the 5 µs hand-off is idle time but not a gap
  CHECK(step2.largest_gap_seconds == Approx(500e-6));
  CHECK(analysis.ops_without_timing == 1);

  // the whole: nothing counted twice
  CHECK(analysis.timeline.busy_seconds == Approx(4 * 550e-6));
  CHECK(analysis.timeline.idle_seconds == Approx(1045e-6));
  CHECK(analysis.timeline.device_seconds() == Approx((3255 - 10) * 1e-6));
  CHECK(analysis.timeline.syncs == 2);
  CHECK(analysis.timeline.span_seconds == Approx(10e-3));
  REQUIRE(analysis.runs.size() == 1);
  CHECK(analysis.runs[0].timeline.busy_seconds == Approx(analysis.timeline.busy_seconds));

  // per-step busy time by category
  CHECK(analysis.steps[1].category_seconds[static_cast<size_t>(OpCategory::Matmul)] == Approx(500e-6));
  CHECK(analysis.steps[1].category_seconds[static_cast<size_t>(OpCategory::Elementwise)] == Approx(50e-6));
}

TEST_CASE("phases: ops are placed by the range they were enqueued in", "[analysis]") {
  const Trace trace = synthetic_trace();
  const DeviceSpec device = test_device();
  const RunAnalysis analysis = analyze(trace, &device);

  const PhaseStats* prefill = analysis.phase(Phase::Prefill);
  const PhaseStats* decode = analysis.phase(Phase::Decode);
  REQUIRE(prefill);
  REQUIRE(decode);
  CHECK(prefill->steps == 1);
  CHECK(decode->steps == 3);
  CHECK(prefill->timeline.busy_seconds == Approx(550e-6));
  CHECK(prefill->timeline.idle_seconds == Approx(0.0).margin(1e-12));
  CHECK(decode->timeline.syncs == 1);  // the final read is outside the steps
  CHECK(decode->point.count == 6);
  // decode idles 1045 of 2695 µs: more than the 30% line, so overhead-bound
  CHECK(decode->limiter == Limiter::Overhead);
  CHECK(prefill->limiter == Limiter::Memory);
  CHECK_THAT(analysis.summary, Catch::Matchers::Contains("decode is overhead-bound"));
  CHECK_THAT(analysis.summary, Catch::Matchers::Contains("prefill is memory-bound at"));
  CHECK_THAT(analysis.summary, Catch::Matchers::Contains("host syncs per decode step"));
}

TEST_CASE("category rows and top ops: work, roof and limiter", "[analysis]") {
  const Trace trace = synthetic_trace();
  const DeviceSpec device = test_device();
  const RunAnalysis analysis = analyze(trace, &device);

  const OpGroup* decode_matmul = nullptr;
  for (const OpGroup& group : analysis.categories) {
    if (group.phase == Phase::Decode && group.category == OpCategory::Matmul) decode_matmul = &group;
  }
  REQUIRE(decode_matmul);
  const double weight_bytes = 4096.0 * 5000 * 2;
  const double matmul_bytes = weight_bytes + 5000 * 2 + 4096 * 2;
  CHECK(decode_matmul->point.count == 3);
  CHECK(decode_matmul->point.seconds == Approx(1.5e-3));
  CHECK(decode_matmul->point.bytes == Approx(3 * matmul_bytes));
  CHECK(decode_matmul->point.memory_fraction() == Approx(matmul_bytes / 100e9 / 500e-6));
  CHECK(decode_matmul->limiter == Limiter::Memory);
  CHECK(decode_matmul->precision == "fp16");
  CHECK(decode_matmul->share_of_device_time == Approx(1.5e-3 / 2.2e-3));
  // sorted by time: the decode matmuls come first
  CHECK(&analysis.categories.front() == decode_matmul);

  // a 64-element add for 50 µs is neither tiny (CPU line 5 µs) nor near a roof
  REQUIRE_FALSE(analysis.top_ops.empty());
  CHECK(analysis.top_ops.front().name == "matmul");
  CHECK(analysis.top_ops.front().label == "down_proj");
  for (const OpGroup& group : analysis.top_ops) {
    if (group.name == "add") CHECK(group.limiter == Limiter::Latency);
  }
}

TEST_CASE("gap line: an idle interval exactly at the line is a gap, just below is not", "[analysis]") {
  const DeviceSpec device = test_device();
  for (const auto& [idle_ns, gaps] : {std::pair<int64_t, int64_t>{10 * kUs, 1}, {10 * kUs - 1, 0}}) {
    Trace trace;
    trace.metadata().backend = "cpu";
    trace.add_op(small_add(1), 0, 1, 0, 100 * kUs);
    trace.add_op(small_add(2), 2, 3, 100 * kUs + idle_ns, 200 * kUs + idle_ns);
    const RunAnalysis analysis = analyze(trace, &device);
    CHECK(analysis.timeline.gaps == gaps);
    CHECK(analysis.timeline.idle_seconds == Approx(idle_ns * 1e-9));
  }
}

TEST_CASE("analysis refuses a trace without roofs, and handles an empty one", "[analysis]") {
  Trace trace;
  CHECK_THROWS_WITH(analyze(trace), Catch::Matchers::Contains("no device roofs"));
  const DeviceSpec device = test_device();
  const RunAnalysis empty = analyze(trace, &device);
  CHECK(empty.steps.empty());
  CHECK(empty.timeline.busy_seconds == 0.0);
  CHECK_THAT(empty.summary, Catch::Matchers::Contains("idle"));
  const nlohmann::json json = to_json(empty);
  CHECK(json["schema_version"] == RunAnalysis::kSchemaVersion);
}

TEST_CASE("result JSON carries the schema version and every section", "[analysis]") {
  const Trace trace = synthetic_trace();
  const DeviceSpec device = test_device();
  const nlohmann::json json = to_json(analyze(trace, &device));
  CHECK(json["schema"] == "decodelab-result");
  CHECK(json["schema_version"] == 2);
  CHECK(json["steps"].size() == 3);
  CHECK(json["steps"][1]["timeline"]["syncs"] == 1);
  CHECK(json["categories"][0]["category"] == "matmul");
  CHECK(json["categories"][0]["limiter"] == "memory");
  CHECK(json["phases"].size() == 2);
  CHECK(json["roofs"]["bandwidth_bytes_per_s"] == 100e9);
}

TEST_CASE("work above its roof is called out: the roofs, not the op, are wrong", "[analysis]") {
  const DeviceSpec device = test_device();
  Trace trace;
  trace.metadata().backend = "cpu";
  trace.add_op(big_matmul(1), 0, 1, 0, 100 * kUs);  // 41 MB in 100 µs: 4x the 100 GB/s roof
  const RunAnalysis fast = analyze(trace, &device);
  REQUIRE(fast.notes.size() == 1);
  CHECK_THAT(fast.notes[0], Catch::Matchers::Contains("ran above its roof") && Catch::Matchers::Contains("cache") &&
                                Catch::Matchers::Contains("calibrate again"));

  Trace honest;
  honest.metadata().backend = "cpu";
  honest.add_op(big_matmul(1), 0, 1, 0, 500 * kUs);  // 82%
  CHECK(analyze(honest, &device).notes.empty());
}

TEST_CASE("decode steps replayed as captured graphs are read as such, not as idle work", "[analysis]") {
  const DeviceSpec device = test_device();
  Trace trace;
  trace.metadata().backend = "cuda";
  trace.range_begin(RangeKind::Run, -1, 0);
  OpId id = 1;
  for (int step = 1; step <= 3; ++step) {
    const int64_t start = step * 1000 * kUs;
    trace.range_begin(RangeKind::Step, step, start);
    trace.add_op(decodelab::testing::op(id++, "graph_replay", "decode_step", OpCategory::Other, {}, {}), start + 1,
                 start + 2, start + 10 * kUs, start + 900 * kUs);
    trace.add_op(decodelab::testing::elementwise_add(id++, 64, DType::F32), start + 3, start + 4, start + 900 * kUs,
                 start + 920 * kUs);
    trace.range_end(RangeKind::Step, step, start + 999 * kUs);
  }
  trace.range_end(RangeKind::Run, -1, 4000 * kUs);

  const RunAnalysis analysis = analyze(trace, &device);
  const PhaseStats* decode = analysis.phase(Phase::Decode);
  REQUIRE(decode);
  CHECK(decode->opaque_fraction == Approx(890.0 / 910.0));
  CHECK(decode->point.count == 3);  // only the adds carry declared work
  CHECK_THAT(decode->summary, Catch::Matchers::Contains("captured graphs"));
  CHECK(analysis.timeline.busy_seconds == Approx(3 * 910e-6));  // the replays still count as busy time
}

TEST_CASE("a point above its roof is explained: in cache, or the roofs are suspect", "[analysis]") {
  // Roofs a tenth of what the synthetic matmuls reach: every matmul group runs above them.
  DeviceSpec low = test_device();
  low.measured->bandwidth = 10e9;
  low.measured->measured_at = 1700000000;
  SECTION("a decode step's bytes within the cache") {
    low.cache_bytes = 1e9;
    const RunAnalysis analysis = analyze(synthetic_trace(), &low);
    REQUIRE_FALSE(analysis.above_roof.empty());
    for (const AboveRoof& above : analysis.above_roof) {
      CHECK(above.cache_resident);
      CHECK_THAT(above.explanation, Catch::Matchers::Contains("within the 1.00 GB last-level cache"));
    }
    CHECK_FALSE(analysis.roofs_suspect());
    CHECK(std::any_of(analysis.notes.begin(), analysis.notes.end(), [](const std::string& note) {
      return note.find("decode matmul") != std::string::npos && note.find("cache-resident") != std::string::npos;
    }));
  }
  SECTION("larger than the cache: the roofs are suspect") {
    low.cache_bytes = 1e6;
    const RunAnalysis analysis = analyze(synthetic_trace(), &low);
    REQUIRE_FALSE(analysis.above_roof.empty());
    CHECK(analysis.roofs_suspect());
    CHECK_THAT(analysis.above_roof.front().explanation, Catch::Matchers::Contains("roof suspect") && Catch::Matchers::Contains("decodelab calibrate"));
    const nlohmann::json json = to_json(analysis);
    CHECK(json["above_roof"].size() == analysis.above_roof.size());
  }
  SECTION("roofs it does not exceed: nothing to explain") {
    const DeviceSpec normal = test_device();
    CHECK(analyze(synthetic_trace(), &normal).above_roof.empty());
  }
}
