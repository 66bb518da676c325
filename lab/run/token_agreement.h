// How a bug's generated tokens are held to its fixed twin's. On the CPU backend every op
// rounds the same way whatever the bug, so the tokens must be identical. On CUDA they need
// not be: cuBLAS picks its kernels per shape (M differs between a batch and one request)
// and the attention's key splits follow the cache capacity, so logits differ within the
// dtype's logit tolerance, and a greedy choice between two logits that close may go
// either way — after which the two generations legitimately part. So, where near-ties are
// allowed, a request's tokens are compared up to its first difference, and that
// difference is accepted only if the fixed run's logits at that step make the other token
// a near-tie: its logit within logit_tolerance(dtype) x max(1, max |logit|) of the
// fixed run's best (the rule tests/test_engine_reference.cpp holds the engine to).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/base/dtype.h"

namespace decodelab {

// The fixed run regenerated up to `step` (new_tokens = step + 1): its tokens and the logits
// its last token came from, [requests * vocab]. Empty logits: it could not be had.
struct FixedStep {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<float> logits;
};
using FixedStepSource = std::function<FixedStep(int step)>;

struct TokenAgreement {
  bool identical = true;  // every generated token the same
  bool agree = true;      // identical, or every difference starts at a near-tie of the fixed run
  int near_ties = 0;      // requests that parted at a near-tie
  bool near_ties_allowed = false;
  std::string detail;     // one sentence: what was compared and, where they differ, where and why
};

// `fixed_step` null: exact comparison (the CPU backend). Otherwise each request that
// differs is judged at its first differing step from the regenerated fixed logits; a
// regeneration whose tokens before that step are not the fixed run's cannot vouch for it.
TokenAgreement compare_generated_tokens(const std::vector<std::vector<int32_t>>& fixed,
                                        const std::vector<std::vector<int32_t>>& buggy, int64_t vocab, DType dtype,
                                        const FixedStepSource* fixed_step);

}  // namespace decodelab
