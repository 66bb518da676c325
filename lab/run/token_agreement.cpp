// Fixed vs buggy tokens, exactly or up to a near-tie of the fixed run (see the header).
#include "lab/run/token_agreement.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "engine/model/logit_tolerance.h"

namespace decodelab {

namespace {

std::optional<size_t> first_difference(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t common = std::min(a.size(), b.size());
  for (size_t i = 0; i < common; ++i)
    if (a[i] != b[i]) return i;
  if (a.size() != b.size()) return common;
  return std::nullopt;
}

// Why `other` is not a near-tie of `chosen` in `row`, or "" when it is.
std::string near_tie_problem(const float* row, int64_t vocab, int32_t chosen, int32_t other, double tolerance) {
  if (chosen < 0 || chosen >= vocab || other < 0 || other >= vocab) return "a token outside the vocabulary";
  double scale = 1.0;
  for (int64_t i = 0; i < vocab; ++i) scale = std::max(scale, std::fabs(static_cast<double>(row[i])));
  const double best = *std::max_element(row, row + vocab);
  const double gap = best - row[other];
  const double allowed = tolerance * scale;
  if (!std::isfinite(gap) || gap > allowed) {
    char text[160];
    std::snprintf(text, sizeof text, "the fixed run's logit for token %d is %.4g below its best, beyond the tolerance %.4g",
                  other, gap, allowed);
    return text;
  }
  return "";
}

}  // namespace

TokenAgreement compare_generated_tokens(const std::vector<std::vector<int32_t>>& fixed,
                                        const std::vector<std::vector<int32_t>>& buggy, int64_t vocab, DType dtype,
                                        const FixedStepSource* fixed_step) {
  TokenAgreement result;
  result.near_ties_allowed = fixed_step != nullptr;
  if (fixed.size() != buggy.size()) {
    result.identical = result.agree = false;
    result.detail = std::to_string(fixed.size()) + " fixed requests against " + std::to_string(buggy.size()) + " buggy";
    return result;
  }
  std::map<size_t, std::vector<size_t>> requests_by_step;  // first differing step -> requests
  for (size_t request = 0; request < fixed.size(); ++request) {
    if (auto step = first_difference(fixed[request], buggy[request])) requests_by_step[*step].push_back(request);
  }
  if (requests_by_step.empty()) {
    result.detail = "identical tokens";
    return result;
  }
  result.identical = false;
  const auto& [first_step, first_requests] = *requests_by_step.begin();
  const std::string first = "request " + std::to_string(first_requests.front()) + " differs from step " +
                            std::to_string(first_step);
  if (!fixed_step) {
    result.agree = false;
    result.detail = first + " (exact tokens required on this backend)";
    return result;
  }
  const double tolerance = logit_tolerance(dtype);
  std::vector<std::string> problems;
  for (const auto& [step, requests] : requests_by_step) {
    const FixedStep regenerated = (*fixed_step)(static_cast<int>(step));
    for (size_t request : requests) {
      const std::string where = "request " + std::to_string(request) + " at step " + std::to_string(step);
      if (step >= fixed[request].size() || step >= buggy[request].size()) {
        problems.push_back(where + ": the runs generated different numbers of tokens");
        continue;
      }
      if (regenerated.logits.size() != fixed.size() * static_cast<size_t>(vocab) ||
          request >= regenerated.tokens.size() || regenerated.tokens[request].size() < step) {
        problems.push_back(where + ": the fixed run's logits at that step could not be had");
        continue;
      }
      const std::vector<int32_t>& prefix = regenerated.tokens[request];
      if (!std::equal(prefix.begin(), prefix.begin() + static_cast<std::ptrdiff_t>(step), fixed[request].begin())) {
        problems.push_back(where + ": the fixed run, regenerated, parted from itself before that step");
        continue;
      }
      const float* row = regenerated.logits.data() + request * static_cast<size_t>(vocab);
      const std::string problem = near_tie_problem(row, vocab, fixed[request][step], buggy[request][step], tolerance);
      if (problem.empty()) {
        ++result.near_ties;
      } else {
        problems.push_back(where + ": " + problem);
      }
    }
  }
  result.agree = problems.empty();
  if (result.agree) {
    result.detail = "same tokens up to a near-tie: " + std::to_string(result.near_ties) +
                    " request(s) parted where the fixed run's top logits were within the " + dtype_name(dtype) +
                    " logit tolerance (first: " + first + ")";
  } else {
    result.detail = "tokens differ: " + problems.front();
    if (problems.size() > 1) result.detail += " (and " + std::to_string(problems.size() - 1) + " more)";
  }
  return result;
}

}  // namespace decodelab
