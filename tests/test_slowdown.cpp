// Slowdown verdicts: each kind with its sentence, the metric the scenario names deciding
// which slowdown is judged, and a --set on a workload key taking the range away.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "lab/run/compare.h"
#include "lab/scenario/scenario.h"
#include "lab/run/slowdown.h"

using namespace decodelab;

namespace {

Estimate slowdown(double median, double low, double high, int pairs = 8) {
  Estimate estimate;
  estimate.median = median;
  estimate.low = low;
  estimate.high = high;
  estimate.samples = pairs;
  estimate.confidence = 0.95;
  return estimate;
}

const ExpectedSlowdown two_to_four{2, 4, SlowdownMetric::Decode};

}  // namespace

TEST_CASE("verdicts: in range, below, above, each with its sentence", "[slowdown]") {
  const SlowdownVerdict in = judge_slowdown(slowdown(3.0, 2.9, 3.1), SlowdownMetric::Decode, two_to_four, {});
  CHECK(in.kind == VerdictKind::InRange);
  CHECK(in.sentence == "the decode slowdown 3.00x (95% interval 2.90x-3.10x) lies within the expected 2-4x");
  const SlowdownVerdict below = judge_slowdown(slowdown(1.4, 1.38, 1.45), SlowdownMetric::Decode, two_to_four, {});
  CHECK(below.kind == VerdictKind::Below);
  CHECK(below.sentence.find("wholly below the expected 2-4x") != std::string::npos);
  const SlowdownVerdict above = judge_slowdown(slowdown(5.0, 4.5, 5.5), SlowdownMetric::EndToEnd, two_to_four, {});
  CHECK(above.kind == VerdictKind::Above);
  CHECK(above.sentence.find("end-to-end slowdown 5.00x") != std::string::npos);
  CHECK(to_string(VerdictKind::WithinNoise) == std::string("within noise"));
}

TEST_CASE("within noise: the interval crosses an edge of the range, or 1.0, or too few pairs", "[slowdown]") {
  const SlowdownVerdict edge = judge_slowdown(slowdown(2.05, 1.9, 2.2), SlowdownMetric::Decode, two_to_four, {});
  CHECK(edge.kind == VerdictKind::WithinNoise);
  CHECK(edge.sentence.find("straddles an edge") != std::string::npos);
  const ExpectedSlowdown small{1.1, 1.3, SlowdownMetric::Decode};
  const SlowdownVerdict one = judge_slowdown(slowdown(1.04, 0.97, 1.08), SlowdownMetric::Decode, small, {});
  CHECK(one.kind == VerdictKind::WithinNoise);
  CHECK(one.sentence.find("includes 1.0x") != std::string::npos);
  const SlowdownVerdict few = judge_slowdown(slowdown(3.0, 2.9, 3.1, 3), SlowdownMetric::Decode, two_to_four, {});
  CHECK(few.kind == VerdictKind::WithinNoise);
  CHECK(few.sentence.find("only 3 pairs") != std::string::npos);
}

TEST_CASE("workload changed: a --set on a key the range was written for", "[slowdown]") {
  const SlowdownVerdict changed =
      judge_slowdown(slowdown(1.04, 0.9, 1.2), SlowdownMetric::Decode, two_to_four, {"workload.new_tokens"});
  CHECK(changed.kind == VerdictKind::WorkloadChanged);
  CHECK(changed.sentence.find("--set changed workload.new_tokens") != std::string::npos);
  const SlowdownVerdict none = judge_slowdown(slowdown(3, 2.9, 3.1), SlowdownMetric::Decode, std::nullopt, {});
  CHECK(none.kind == VerdictKind::NoRange);
  CHECK_FALSE(none.sentence.empty());
}

TEST_CASE("a verdict judges the slowdown its scenario names", "[slowdown]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "decodelab_test_slowdown";
  std::filesystem::create_directories(dir);
  auto scenario_with = [&](const std::string& of, const std::vector<std::string>& assignments = {}) {
    const std::filesystem::path file = dir / ("s-" + of + ".yaml");
    std::ofstream(file) << "model: lab-tiny\ndtype: fp16\nworkload: {requests: 2, batch_size: 2, prompt_tokens: 4, "
                           "new_tokens: 4}\nbugs: {fp32_ops: true}\nexpected_slowdown: {min: 2, max: 4, of: "
                        << of << "}\n";
    return load_scenario(file, assignments);
  };
  // decode 3x (in range), end-to-end 1.5x (below): which verdict depends on `of` alone.
  const Estimate decode = slowdown(3.0, 2.9, 3.1), end_to_end = slowdown(1.5, 1.45, 1.55);
  const SlowdownReading by_decode = read_slowdown(scenario_with("decode"), decode, end_to_end);
  CHECK(by_decode.metric == SlowdownMetric::Decode);
  CHECK(by_decode.measured.median == 3.0);
  CHECK(by_decode.verdict.kind == VerdictKind::InRange);
  const SlowdownReading by_end = read_slowdown(scenario_with("end_to_end"), decode, end_to_end);
  CHECK(by_end.metric == SlowdownMetric::EndToEnd);
  CHECK(by_end.measured.median == 1.5);
  CHECK(by_end.verdict.kind == VerdictKind::Below);
  // A --set on the workload: not held against the range; on run: still judged.
  const Scenario changed = scenario_with("decode", {"workload.new_tokens=8", "run.max_seconds=5"});
  CHECK(changed_workload_keys(changed) == std::vector<std::string>{"workload.new_tokens"});
  CHECK(read_slowdown(changed, decode, end_to_end).verdict.kind == VerdictKind::WorkloadChanged);
  CHECK(read_slowdown(scenario_with("decode", {"run.max_seconds=5"}), decode, end_to_end).verdict.kind ==
        VerdictKind::InRange);
  // And it survives the lab's JSON.
  const SlowdownReading back = slowdown_reading_from_json(to_json(by_end));
  CHECK(back.metric == SlowdownMetric::EndToEnd);
  CHECK(back.verdict.kind == VerdictKind::Below);
  CHECK(back.verdict.sentence == by_end.verdict.sentence);
  REQUIRE(back.expected);
  CHECK(back.expected->of == SlowdownMetric::EndToEnd);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a comparison keeps pairing while either slowdown's interval is wider than the target", "[slowdown]") {
  Estimate headline = slowdown(3.0, 2.9, 3.1);
  Estimate other = slowdown(2.5, 2.0, 3.0);
  other.noisy = true;
  CHECK(&slowdown_to_watch(headline, &other) == &other);     // the headline is done, the other is not
  CHECK(&slowdown_to_watch(headline, nullptr) == &headline);  // no other slowdown (no decode steps)
  headline.noisy = true;
  CHECK(&slowdown_to_watch(headline, &other) == &headline);  // the headline first
  other.noisy = false;
  headline.noisy = false;
  CHECK(&slowdown_to_watch(headline, &other) == &headline);  // both done: the headline says so
}

TEST_CASE("drift note: said only when the rows' medians divide to a ratio outside the interval", "[slowdown]") {
  const Estimate decode = slowdown(1.92, 1.84, 1.98, 26);
  CHECK(drift_note(SlowdownMetric::Decode, decode, 1.90).empty());
  CHECK(drift_note(SlowdownMetric::Decode, decode, 1.84).empty());  // on the edge: inside
  const std::string note = drift_note(SlowdownMetric::Decode, decode, 1.52);
  using Catch::Matchers::Contains;
  CHECK_THAT(note, Contains("1.52x") && Contains("outside the decode slowdown's interval") && !Contains("decode_slowdown") && Contains("drifted") &&
                       Contains("1.92x"));
  CHECK_FALSE(drift_note(SlowdownMetric::Decode, decode, 2.5).empty());
  CHECK(drift_note(SlowdownMetric::Decode, Estimate{}, 1.5).empty());  // nothing measured
  CHECK(drift_note(SlowdownMetric::Decode, decode, 0).empty());        // no rows' ratio
}

TEST_CASE("a verdict below the course's range says, from the model, why the range does not apply here",
          "[slowdown]") {
  SlowdownReading headline;
  headline.metric = SlowdownMetric::Decode;
  headline.expected = ExpectedSlowdown{100, 1000, SlowdownMetric::Decode};
  headline.measured.median = 1.51;
  headline.measured.low = 1.45;
  headline.measured.high = 1.6;
  headline.measured.samples = 12;
  headline.verdict = judge_slowdown(headline.measured, SlowdownMetric::Decode, headline.expected, {});
  REQUIRE(headline.verdict.kind == VerdictKind::Below);
  RowPrediction prediction;
  prediction.of = SlowdownMetric::Decode;
  prediction.here.device = "this-cpu";
  prediction.here.decode_slowdown = 1.6;
  DeviceSlowdown gpu;
  gpu.device = "h200";
  gpu.decode_slowdown = 240;
  gpu.mechanism = "16 device-to-host reads per step";
  prediction.elsewhere.push_back(gpu);

  explain_range(headline, prediction);
  const std::string& sentence = headline.verdict.sentence;
  using Catch::Matchers::Contains;
  CHECK_THAT(sentence, Contains("wholly below the expected") && Contains("Below is a finding, not a failure") &&
                           Contains("1.60x on this-cpu") && Contains("240.0x on h200") &&
                           Contains("inside the course's") && Contains("does not apply to this device"));

  // In range: nothing added.
  SlowdownReading in_range = headline;
  in_range.measured.median = 200;
  in_range.measured.low = 190;
  in_range.measured.high = 210;
  in_range.verdict = judge_slowdown(in_range.measured, SlowdownMetric::Decode, in_range.expected, {});
  const std::string before = in_range.verdict.sentence;
  explain_range(in_range, prediction);
  CHECK(in_range.verdict.sentence == before);
}
