// Medians, their order-statistics intervals, and the paired bootstrap of a ratio.
#include "profiling/statistics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace decodelab {

double Estimate::relative_ci() const {
  if (median == 0) return 0.0;
  return std::max(high - median, median - low) / std::fabs(median);
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

namespace {

// P(Binomial(n, 1/2) <= k), summed in log space so that large n cannot overflow.
double binomial_half_cdf(int n, int k) {
  double sum = 0;
  for (int i = 0; i <= k; ++i) {
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) - n * std::log(2.0));
  }
  return sum;
}

bool noisy(const Estimate& estimate, double target_ci) {
  return estimate.confidence < kConfidenceLevel || (target_ci > 0 && estimate.relative_ci() > target_ci);
}

// splitmix64: a small seeded generator, the same on every platform.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

double quantile_of_sorted(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double weight = position - static_cast<double>(below);
  return sorted[below] * (1 - weight) + sorted[above] * weight;
}

}  // namespace

Estimate median_estimate(std::vector<double> samples, double target_ci) {
  Estimate estimate;
  estimate.samples = static_cast<int>(samples.size());
  if (samples.empty()) return estimate;
  std::sort(samples.begin(), samples.end());
  const int n = estimate.samples;
  estimate.median = median_of(samples);
  // The largest rank k with P(B <= k - 1) <= 2.5%: [x_(k), x_(n-k+1)] covers the median
  // with probability 1 - 2·P(B <= k - 1). Below 6 samples no k qualifies: min..max.
  const double tail = (1 - kConfidenceLevel) / 2;
  int k = 1;
  while (k + 1 <= (n + 1) / 2 && binomial_half_cdf(n, k) <= tail) ++k;
  estimate.low = samples[static_cast<size_t>(k - 1)];
  estimate.high = samples[static_cast<size_t>(n - k)];
  estimate.confidence = n == 1 ? 0.0 : 1 - 2 * binomial_half_cdf(n, k - 1);
  estimate.noisy = noisy(estimate, target_ci);
  return estimate;
}

Estimate reciprocal(const Estimate& time, double k) {
  Estimate rate = time;
  rate.median = time.median > 0 ? k / time.median : 0.0;
  rate.low = time.high > 0 ? k / time.high : 0.0;
  rate.high = time.low > 0 ? k / time.low : 0.0;
  return rate;
}

Estimate scaled(const Estimate& value, double k) {
  Estimate result = value;
  result.median = value.median * k;
  result.low = std::min(value.low * k, value.high * k);
  result.high = std::max(value.low * k, value.high * k);
  return result;
}

Estimate ratio_of_medians(const std::vector<double>& numerator, const std::vector<double>& denominator,
                          double target_ci, int resamples, uint64_t seed) {
  if (numerator.size() != denominator.size())
    throw std::invalid_argument("ratio_of_medians: paired samples of different lengths");
  Estimate ratio;
  const size_t n = numerator.size();
  ratio.samples = static_cast<int>(n);
  if (n == 0) return ratio;
  const double bottom = median_of(denominator);
  ratio.median = bottom > 0 ? median_of(numerator) / bottom : 0.0;
  if (n == 1) {
    ratio.low = ratio.high = ratio.median;
    ratio.noisy = true;
    return ratio;
  }
  SplitMix random{seed};
  std::vector<double> ratios, top(n), under(n);
  ratios.reserve(static_cast<size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    for (size_t i = 0; i < n; ++i) {
      const size_t pick = static_cast<size_t>(random.next() % n);
      top[i] = numerator[pick];
      under[i] = denominator[pick];
    }
    const double resampled_bottom = median_of(under);
    if (resampled_bottom > 0) ratios.push_back(median_of(top) / resampled_bottom);
  }
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - kConfidenceLevel) / 2;
  ratio.low = std::min(ratio.median, quantile_of_sorted(ratios, tail));
  ratio.high = std::max(ratio.median, quantile_of_sorted(ratios, 1 - tail));
  // The bootstrap cannot promise 95% where the order statistics of either side cannot.
  ratio.confidence = static_cast<int>(n) >= kSamplesFor95 ? kConfidenceLevel : 1 - 2 * std::pow(0.5, static_cast<double>(n));
  ratio.noisy = noisy(ratio, target_ci);
  return ratio;
}

nlohmann::json to_json(const Estimate& estimate) {
  return {{"median", estimate.median},         {"low", estimate.low},
          {"high", estimate.high},             {"relative_ci", estimate.relative_ci()},
          {"samples", estimate.samples},       {"confidence", estimate.confidence},
          {"noisy", estimate.noisy}};
}

Estimate estimate_from_json(const nlohmann::json& json) {
  Estimate estimate;
  if (!json.is_object()) return estimate;
  estimate.median = json.value("median", 0.0);
  estimate.low = json.value("low", estimate.median);
  estimate.high = json.value("high", estimate.median);
  estimate.samples = json.value("samples", 0);
  estimate.confidence = json.value("confidence", 0.0);
  estimate.noisy = json.value("noisy", false);
  return estimate;
}

std::string format_interval(const Estimate& estimate) {
  const double percent = 100 * estimate.relative_ci();
  char text[48];
  std::snprintf(text, sizeof text, percent < 9.95 ? "±%.1f%%" : "±%.0f%%", percent);
  return std::string(text) + (estimate.noisy ? " noisy" : "");
}

}  // namespace decodelab
