// Statistics: the order-statistics interval of a median worked out by hand, the noise
// flag, rates derived from times, and the paired bootstrap of a ratio — which pairing
// makes narrow when drift hits both sides of each pair.
#include <catch2/catch.hpp>

#include <cmath>

#include "profiling/model/statistics.h"

using namespace decodelab;

TEST_CASE("median interval: ranks from the binomial, its confidence, min..max below 6 samples", "[statistics]") {
  // n = 6: only [x(1), x(6)] reaches 95%: 1 - 2/64.
  const Estimate six = median_estimate({6, 1, 5, 2, 4, 3}, 0.5);
  CHECK(six.median == 3.5);
  CHECK(six.low == 1);
  CHECK(six.high == 6);
  CHECK(six.confidence == Approx(1 - 2.0 / 64));
  CHECK(six.samples == 6);
  // n = 9: P(B <= 1) = 10/512 <= 2.5% < P(B <= 2): [x(2), x(8)].
  const Estimate nine = median_estimate({9, 8, 7, 6, 5, 4, 3, 2, 1}, 0.5);
  CHECK(nine.median == 5);
  CHECK(nine.low == 2);
  CHECK(nine.high == 8);
  CHECK(nine.confidence == Approx(1 - 2 * 10.0 / 512));
  // n = 5: min..max at 1 - 2/32, below 95%: noisy whatever the target.
  const Estimate five = median_estimate({10, 10, 10, 10, 10}, 0.5);
  CHECK(five.confidence == Approx(1 - 2.0 / 32));
  CHECK(five.noisy);
  CHECK(median_estimate({}, 0.1).samples == 0);
}

TEST_CASE("noisy: an interval wider than the target, quiet within it", "[statistics]") {
  const std::vector<double> tight = {100, 101, 99, 100, 100.5, 99.5, 100};
  const Estimate quiet = median_estimate(tight, 0.02);
  CHECK_FALSE(quiet.noisy);
  CHECK(quiet.relative_ci() == Approx(0.01));  // the larger side: 101 or 99 from 100
  CHECK(median_estimate(tight, 0.005).noisy);
  CHECK(format_interval(quiet) == "±1.0%");
  CHECK(format_interval(median_estimate(tight, 0.005)) == "±1.0% noisy");
  // One sample has no interval; a width past the median says only "wide"; contention is said.
  CHECK(format_interval(median_estimate({5.0}, 0.03)) == "(1 sample, no interval)");
  CHECK(format_interval(median_estimate({1, 1, 1, 1, 300, 300, 300}, 0.03)) == "±>100% noisy");
  Estimate contended = quiet;
  contended.contended = true;
  CHECK(format_interval(contended) == "±1.0% contended");
  CHECK(estimate_from_json(to_json(contended)).contended);
}

TEST_CASE("a rate from a time: the median maps exactly and the interval flips", "[statistics]") {
  const Estimate time = median_estimate({2.0, 2.5, 4.0, 2.2, 3.0, 2.4}, 0);
  const Estimate rate = reciprocal(time, 8.0);
  CHECK(rate.median == Approx(8.0 / time.median));
  CHECK(rate.low == Approx(8.0 / time.high));
  CHECK(rate.high == Approx(8.0 / time.low));
  CHECK(rate.samples == time.samples);
  const Estimate doubled = scaled(time, 2.0);
  CHECK(doubled.median == Approx(2 * time.median));
  CHECK(doubled.low == Approx(2 * time.low));
}

TEST_CASE("paired ratio: the median of each pair's ratio, drift shared by a pair cancels", "[statistics]") {
  // Each pair ran at a different machine speed (1x..3.75x); within a pair buggy = 2 × fixed ± 1%.
  std::vector<double> fixed, buggy, ratios;
  for (int i = 0; i < 12; ++i) {
    const double drift = 1.0 + (i * 5 % 12) / 4.0;
    fixed.push_back(10 * drift);
    buggy.push_back(20 * drift * (i % 2 ? 1.01 : 0.99));
    ratios.push_back(buggy.back() / fixed.back());
  }
  const Estimate ratio = paired_ratio(buggy, fixed, 0.05);
  // The same figure and interval as the median of the pairs' ratios.
  const Estimate direct = median_estimate(ratios, 0.05);
  CHECK(ratio.median == direct.median);
  CHECK(ratio.low == direct.low);
  CHECK(ratio.high == direct.high);
  CHECK(ratio.samples == 12);
  CHECK(ratio.confidence >= kConfidenceLevel);
  // The drift (3.75x between pairs) is gone: the interval spans only the ±1% within pairs.
  CHECK(ratio.median == Approx(2.0));
  CHECK(ratio.low == Approx(1.98));
  CHECK(ratio.high == Approx(2.02));
  CHECK_FALSE(ratio.noisy);
  // Unpaired (the buggy samples in reverse order against the fixed ones) the drift no longer cancels.
  std::vector<double> shuffled(buggy.rbegin(), buggy.rend());
  const Estimate unpaired = paired_ratio(shuffled, fixed, 0.05);
  CHECK(unpaired.high - unpaired.low > 10 * (ratio.high - ratio.low));
  CHECK(unpaired.noisy);
  CHECK_THROWS(paired_ratio({1, 2}, {1}, 0.05));
}

TEST_CASE("estimates survive JSON", "[statistics]") {
  const Estimate estimate = median_estimate({1, 2, 3, 4, 5, 6, 7}, 0.01);
  const Estimate back = estimate_from_json(to_json(estimate));
  CHECK(back.median == estimate.median);
  CHECK(back.low == estimate.low);
  CHECK(back.high == estimate.high);
  CHECK(back.samples == estimate.samples);
  CHECK(back.noisy == estimate.noisy);
  CHECK(to_json(estimate)["relative_ci"].get<double>() == Approx(estimate.relative_ci()));
}
