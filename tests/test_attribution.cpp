// Attribution: the parts add up to the device-time difference, and the cause a bug
// really adds (bytes, idle time) is the one that dominates.
#include <catch2/catch.hpp>

#include "profiling/analysis.h"
#include "profiling/attribution.h"
#include "tests/support/profiling_fixtures.h"

using namespace decodelab;
using namespace decodelab::testing;

namespace {

struct Pair {
  RunAnalysis fixed;
  RunAnalysis buggy;
  double delta_ms = 0;  // device-time difference of the two traces
};

Pair analyse(const SyntheticRun& fixed_run, const SyntheticRun& buggy_run) {
  const DeviceSpec device = synthetic_cpu_device();
  Pair pair;
  pair.fixed = analyze(synthetic_run_trace(fixed_run, device), &device);
  pair.buggy = analyze(synthetic_run_trace(buggy_run, device), &device);
  pair.delta_ms = (pair.buggy.timeline.device_seconds() - pair.fixed.timeline.device_seconds()) * 1e3;
  return pair;
}

const AttributionPart& part(const Attribution& attribution, const std::string& cause) {
  for (const AttributionPart& candidate : attribution.parts)
    if (candidate.cause == cause) return candidate;
  FAIL("no part " << cause);
  throw;
}

}  // namespace

TEST_CASE("fp32 weights in a half model: the extra time is extra bytes", "[attribution]") {
  SyntheticRun fixed;
  SyntheticRun buggy = fixed;
  buggy.fp32_matmuls = true;
  const Pair pair = analyse(fixed, buggy);
  REQUIRE(pair.delta_ms > 0);
  const Attribution attribution = attribute_slowdown(pair.fixed, pair.buggy, pair.delta_ms, 8);
  REQUIRE(attribution.parts.size() == 4);
  // The decomposition is exact against the device timeline: nothing left over.
  CHECK(attribution.residual_fraction() < 0.01);
  CHECK(part(attribution, "extra bytes").ms > 0.8 * pair.delta_ms);
  CHECK(std::abs(part(attribution, "idle device").ms) < 0.05 * pair.delta_ms);
  CHECK(attribution.headline.find("extra bytes") != std::string::npos);
  CHECK(attribution.delta_ms_per_token == Approx(pair.delta_ms / 8));
}

TEST_CASE("a host-bound loop: the extra time is an idle device", "[attribution]") {
  SyntheticRun fixed;
  SyntheticRun buggy = fixed;
  buggy.host_gap_us = 500;
  buggy.sync_each_step = true;
  const Pair pair = analyse(fixed, buggy);
  REQUIRE(pair.delta_ms > 0);
  const Attribution attribution = attribute_slowdown(pair.fixed, pair.buggy, pair.delta_ms, 8);
  CHECK(attribution.residual_fraction() < 0.01);
  CHECK(part(attribution, "idle device").ms > 0.8 * pair.delta_ms);
  CHECK(part(attribution, "idle device").explanation.find("syncs") != std::string::npos);
}

TEST_CASE("the residual is what the parts do not explain", "[attribution]") {
  SyntheticRun fixed;
  SyntheticRun buggy = fixed;
  buggy.fp32_matmuls = true;
  const Pair pair = analyse(fixed, buggy);
  // A measured difference larger than the traces show leaves a residual of exactly the excess.
  const Attribution attribution = attribute_slowdown(pair.fixed, pair.buggy, pair.delta_ms + 5.0, 10);
  CHECK(attribution.residual_ms == Approx(5.0).margin(0.01 * pair.delta_ms));
  CHECK(attribution.residual_ms_per_token == Approx(attribution.residual_ms / 10));
  const nlohmann::json json = to_json(attribution);
  CHECK(json["parts"].size() == 4);
  CHECK(json.contains("residual_ms_per_token"));
  CHECK(format_attribution(attribution).find("| residual |") != std::string::npos);
}

TEST_CASE("identical runs attribute nothing", "[attribution]") {
  const SyntheticRun run;
  const Pair pair = analyse(run, run);
  const Attribution attribution = attribute_slowdown(pair.fixed, pair.buggy, 0.0, 8);
  for (const AttributionPart& each : attribution.parts) CHECK(std::abs(each.ms) < 1e-9);
}
