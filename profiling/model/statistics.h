// How sure a figure is: the median of repeated measurements with a 95% confidence
// interval, the sample count, and whether it met the noise target (docs/metrics.md,
// "Intervals"). One implementation for every figure decodelab prints.
//
// Non-obvious choices: the interval of one figure's median is distribution-free (order
// statistics: the ranks a Binomial(n, 1/2) puts outside 2.5% on each side), so it is exact
// for any timing distribution, including the long right tail of a shared machine; it needs
// 6 samples to reach 95%, and below that the reported interval is min..max with its real,
// lower confidence, and the figure counts as noisy. A slowdown is measured in pairs (fixed
// and buggy repeats alternated, back to back), so it is the median of the pairs' own ratios
// with the same interval: a machine whose speed drifts between pairs (a shared machine's
// memory bandwidth can move by a third within minutes) slows both sides of a pair alike and
// cancels in its ratio,
// where a ratio of the two sides' medians would divide medians taken in different periods.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace decodelab {

// The confidence every interval aims for.
constexpr double kConfidenceLevel = 0.95;
// Fewest samples whose order-statistics interval of the median reaches 95% (1 - 2/2^6).
constexpr int kSamplesFor95 = 6;

struct Estimate {
  double median = 0;
  double low = 0, high = 0;  // the confidence interval
  double confidence = 0;     // its coverage: ≥ 0.95 from kSamplesFor95 samples, less below
  int samples = 0;
  bool noisy = false;        // relative_ci() above the target, or confidence below 95%
  // Measured while other work took the cores (the machine check before, or the watch during
  // or after the repeats): the interval says how the repeats agreed, not that the figure is
  // this machine's; printed "contended" whatever its width.
  bool contended = false;

  // The interval's larger distance from the median, relative to it: the "±" printed.
  double relative_ci() const;
  bool contains(double value) const { return low <= value && value <= high; }
};

// The median of `samples` and its order-statistics interval; noisy when relative_ci()
// exceeds target_ci (0 = no target) or the interval is below 95%.
Estimate median_estimate(std::vector<double> samples, double target_ci);

// k / x of an estimate of x, for figures that are rates of a measured time (tokens/s from
// the time per step): the median maps to k / median and the interval flips. Exact for the
// median (a monotone map of an odd count keeps the middle sample; for an even count the
// rate is k over the averaged time, the figure the time's median implies).
Estimate reciprocal(const Estimate& time, double k);
// k · x: a figure proportional to a measured one (per token from per step).
Estimate scaled(const Estimate& value, double k);

// The median over pairs of numerator[i] / denominator[i] (same length: one entry per pair),
// with median_estimate's interval and noise flag. Throws on different lengths.
Estimate paired_ratio(const std::vector<double>& numerator, const std::vector<double>& denominator, double target_ci);

// The plain median (0 for no samples), shared by every summary in the project.
double median_of(std::vector<double> values);

// {"median", "low", "high", "relative_ci", "samples", "confidence", "noisy", "contended"},
// and back (missing fields read as 0/false).
nlohmann::json to_json(const Estimate& estimate);
Estimate estimate_from_json(const nlohmann::json& json);

// "±1.8%" (the interval's larger side, relative to the median), then " noisy" when it is,
// " contended" when it was measured under contention; "±>100%" for an interval wider than
// the median, "(1 sample, no interval)" for one sample.
std::string format_interval(const Estimate& estimate);

}  // namespace decodelab
