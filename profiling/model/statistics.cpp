// Medians, their order-statistics intervals, and the median of paired ratios.
#include "profiling/model/statistics.h"

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

Estimate paired_ratio(const std::vector<double>& numerator, const std::vector<double>& denominator,
                      double target_ci) {
  if (numerator.size() != denominator.size())
    throw std::invalid_argument("paired_ratio: paired samples of different lengths");
  std::vector<double> ratios;
  ratios.reserve(numerator.size());
  for (size_t i = 0; i < numerator.size(); ++i) ratios.push_back(denominator[i] > 0 ? numerator[i] / denominator[i] : 0.0);
  return median_estimate(std::move(ratios), target_ci);
}

nlohmann::json to_json(const Estimate& estimate) {
  return {{"median", estimate.median},         {"low", estimate.low},
          {"high", estimate.high},             {"relative_ci", estimate.relative_ci()},
          {"samples", estimate.samples},       {"confidence", estimate.confidence},
          {"noisy", estimate.noisy},           {"contended", estimate.contended}};
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
  estimate.contended = json.value("contended", false);
  return estimate;
}

std::string format_interval(const Estimate& estimate) {
  const std::string contended = estimate.contended ? " contended" : "";
  // One sample has no spread to show: "±0.0% noisy" would claim a width it never measured.
  if (estimate.samples == 1) return "(1 sample, no interval)" + contended;
  const double percent = 100 * estimate.relative_ci();
  char text[48];
  if (percent >= 100) {
    // Past the median itself the width says only that the samples disagree ("±10613%" is noise in a number).
    std::snprintf(text, sizeof text, "±>100%%");
  } else {
    std::snprintf(text, sizeof text, percent < 9.95 ? "±%.1f%%" : "±%.0f%%", percent);
  }
  return std::string(text) + (estimate.noisy ? " noisy" : "") + contended;
}

}  // namespace decodelab
