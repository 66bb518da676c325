// lab/run/token_agreement.h: a bug's tokens against its fixed twin's — exactly where the
// backend rounds alike whatever the bug (the CPU), else up to the first step where the
// fixed run's own logits make the other choice a near-tie within the dtype's tolerance.
#include <catch2/catch.hpp>

#include "engine/model/logit_tolerance.h"
#include "lab/run/token_agreement.h"

using namespace decodelab;

namespace {

constexpr int64_t kVocab = 8;

// Fixed-run logits for every request: a clear winner `best` at 4.0, and `runner_up` below
// it by `gap`.
std::vector<float> logits_for(int requests, int32_t best, int32_t runner_up, double gap) {
  std::vector<float> logits(static_cast<size_t>(requests) * kVocab, -2.0f);
  for (int r = 0; r < requests; ++r) {
    logits[static_cast<size_t>(r) * kVocab + best] = 4.0f;
    logits[static_cast<size_t>(r) * kVocab + runner_up] = static_cast<float>(4.0 - gap);
  }
  return logits;
}

}  // namespace

TEST_CASE("token agreement: identical tokens agree on any backend", "[token_agreement]") {
  const std::vector<std::vector<int32_t>> tokens = {{1, 2, 3}, {4, 5, 6}};
  const TokenAgreement exact = compare_generated_tokens(tokens, tokens, kVocab, DType::BF16, nullptr);
  CHECK(exact.identical);
  CHECK(exact.agree);
  int calls = 0;
  const FixedStepSource never = [&](int) { ++calls; return FixedStep{}; };
  CHECK(compare_generated_tokens(tokens, tokens, kVocab, DType::BF16, &never).agree);
  CHECK(calls == 0);  // nothing regenerated when nothing differs
}

TEST_CASE("token agreement: exact where required, a difference fails and names where", "[token_agreement]") {
  const std::vector<std::vector<int32_t>> fixed = {{1, 2, 3}, {4, 5, 6}};
  const std::vector<std::vector<int32_t>> buggy = {{1, 2, 3}, {4, 7, 6}};
  const TokenAgreement result = compare_generated_tokens(fixed, buggy, kVocab, DType::BF16, nullptr);
  CHECK_FALSE(result.identical);
  CHECK_FALSE(result.agree);
  CHECK(result.detail.find("request 1 differs from step 1") != std::string::npos);
}

TEST_CASE("token agreement: parting at a near-tie of the fixed run agrees, beyond the tolerance fails",
          "[token_agreement]") {
  const std::vector<std::vector<int32_t>> fixed = {{1, 2, 3}, {4, 5, 6}};
  const std::vector<std::vector<int32_t>> buggy = {{1, 2, 3}, {4, 7, 0}};  // parts at step 1, then anything
  const double tolerance = logit_tolerance(DType::BF16) * 4.0;               // the rows' largest |logit| is 4
  std::vector<int> asked;
  auto source_with_gap = [&](double gap) {
    return FixedStepSource([&, gap](int step) {
      asked.push_back(step);
      return FixedStep{{{1, 2}, {4, 5}}, logits_for(2, /*best=*/5, /*runner_up=*/7, gap)};
    });
  };
  const FixedStepSource near = source_with_gap(tolerance * 0.5);
  const TokenAgreement tie = compare_generated_tokens(fixed, buggy, kVocab, DType::BF16, &near);
  CHECK_FALSE(tie.identical);
  CHECK(tie.agree);
  CHECK(tie.near_ties == 1);
  CHECK(asked == std::vector<int>{1});  // the fixed run regenerated up to the step where they part
  CHECK(tie.detail.find("near-tie") != std::string::npos);

  const FixedStepSource far = source_with_gap(tolerance * 2);
  const TokenAgreement wide = compare_generated_tokens(fixed, buggy, kVocab, DType::BF16, &far);
  CHECK_FALSE(wide.agree);
  CHECK(wide.detail.find("beyond the tolerance") != std::string::npos);

  // fp32's tolerance is far tighter: the same half-bf16-tolerance gap is no tie there.
  const FixedStepSource bf16_tie = source_with_gap(tolerance * 0.5);
  CHECK_FALSE(compare_generated_tokens(fixed, buggy, kVocab, DType::F32, &bf16_tie).agree);
}

TEST_CASE("token agreement: a regeneration that cannot vouch for the step fails", "[token_agreement]") {
  const std::vector<std::vector<int32_t>> fixed = {{1, 2, 3}};
  const std::vector<std::vector<int32_t>> buggy = {{1, 2, 7}};
  // The regenerated fixed run parted from the timed one before step 2: its logits there
  // are of another trajectory.
  const FixedStepSource strayed = [](int) { return FixedStep{{{1, 6, 0}}, logits_for(1, 3, 7, 0.0)}; };
  const TokenAgreement result = compare_generated_tokens(fixed, buggy, kVocab, DType::BF16, &strayed);
  CHECK_FALSE(result.agree);
  CHECK(result.detail.find("parted from itself") != std::string::npos);
  const FixedStepSource nothing = [](int) { return FixedStep{}; };
  CHECK_FALSE(compare_generated_tokens(fixed, buggy, kVocab, DType::BF16, &nothing).agree);
  // A buggy run that generated fewer tokens is no near-tie either.
  const FixedStepSource tie = [](int) { return FixedStep{{{1, 2, 3}}, logits_for(1, 3, 7, 0.0)}; };
  CHECK_FALSE(compare_generated_tokens(fixed, {{1, 2}}, kVocab, DType::BF16, &tie).agree);
}
