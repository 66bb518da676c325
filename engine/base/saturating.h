// Byte arithmetic for memory planning that cannot wrap around. A request such as a batch
// of two billion sequences with a 128k context must be refused with its size, not turn
// into a small (or negative) number by signed overflow: every product and sum here sticks
// at INT64_MAX, which no device has, so the memory check refuses it. Operands are ≥ 0.
#pragma once

#include <cstdint>

namespace decodelab {

constexpr int64_t kSaturatedBytes = INT64_MAX;

constexpr int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? kSaturatedBytes : product;
}

template <typename... Rest>
constexpr int64_t saturating_mul(int64_t a, int64_t b, Rest... rest) {
  return saturating_mul(saturating_mul(a, b), rest...);
}

constexpr int64_t saturating_add(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? kSaturatedBytes : sum;
}

template <typename... Rest>
constexpr int64_t saturating_add(int64_t a, int64_t b, Rest... rest) {
  return saturating_add(saturating_add(a, b), rest...);
}

}  // namespace decodelab
