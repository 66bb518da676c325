// One clock for host and (CPU) device timestamps: nanoseconds on std::chrono::steady_clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace decodelab {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace decodelab
