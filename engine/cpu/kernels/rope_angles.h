// The cosines and sines RoPE rotates by, tabulated per position: cos and sin of
// angle = float(position) · inv_freq[j] in fp32, computed once per position and frequency
// set, then looked up — the same values the kernel would compute row by row, without a
// scalar cosine and sine per row and frequency on the hot path (a step that recomputes its
// prefix, the no_kv_cache bug, ropes hundreds of rows: on lab-tiny 16 pairs × 8-31 rows took
// 6.7 µs per op on one core). The table grows as positions reach further, up to
// kMaxTabulatedPositions; positions past it are computed directly, as before.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace decodelab::cpu {

class RopeAngles {
 public:
  static constexpr int64_t kMaxTabulatedPositions = int64_t{1} << 16;

  // Holds positions 0..last for these frequencies (`half` of them), each position's values in
  // a row of `stride` floats (at least `half`; zeros past it), starting afresh when they differ
  // from the ones held. Not thread-safe: call before a parallel region reads it.
  void cover(const float* frequencies, int64_t half, int64_t stride, int64_t last) {
    if (half != half_ || stride != stride_ ||
        !std::equal(frequencies, frequencies + half, frequencies_.begin(), frequencies_.end())) {
      frequencies_.assign(frequencies, frequencies + half);
      half_ = half;
      stride_ = stride;
      positions_ = 0;
      cosines_.clear();
      sines_.clear();
    }
    const int64_t wanted = std::min(last + 1, kMaxTabulatedPositions);
    if (wanted <= positions_) return;
    cosines_.resize(static_cast<size_t>(wanted * stride));
    sines_.resize(static_cast<size_t>(wanted * stride));
    for (int64_t position = positions_; position < wanted; ++position) {
      compute(static_cast<int32_t>(position), cosines_.data() + position * stride, sines_.data() + position * stride);
    }
    positions_ = wanted;
  }

  // The `stride` cosines and sines at `position` (zeros past `half`), computed.
  void compute(int32_t position, float* cosines, float* sines) const {
    for (int64_t j = 0; j < half_; ++j) {
      const float angle = static_cast<float>(position) * frequencies_[static_cast<size_t>(j)];
      cosines[j] = std::cos(angle);
      sines[j] = std::sin(angle);
    }
    std::fill(cosines + half_, cosines + stride_, 0.0f);
    std::fill(sines + half_, sines + stride_, 0.0f);
  }

  // The cosines and sines at `position` (rows of `stride`), or false where the table does not
  // hold it (then compute() gives them).
  bool row(int32_t position, const float*& cosines, const float*& sines) const {
    if (position < 0 || position >= positions_) return false;
    cosines = cosines_.data() + static_cast<size_t>(position) * static_cast<size_t>(stride_);
    sines = sines_.data() + static_cast<size_t>(position) * static_cast<size_t>(stride_);
    return true;
  }

 private:
  std::vector<float> frequencies_;
  int64_t half_ = 0;
  int64_t stride_ = 0;
  int64_t positions_ = 0;  // positions 0..positions_-1 are held
  std::vector<float> cosines_, sines_;
};

}  // namespace decodelab::cpu
