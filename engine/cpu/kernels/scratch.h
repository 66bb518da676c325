// Kernel scratch memory: a growing, 64-byte aligned float buffer. Kernels keep one per
// thread (thread_local), so the stream's worker and its OpenMP threads allocate only
// when a shape first outgrows what they already hold, never per op.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace decodelab::cpu {

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { std::free(data_); }

  // At least `count` floats; contents are unspecified (callers write before reading).
  float* floats(size_t count) {
    if (count > capacity_) {
      std::free(data_);
      const size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
      data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
      if (!data_) {
        capacity_ = 0;
        throw std::bad_alloc();
      }
      capacity_ = bytes / sizeof(float);
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace decodelab::cpu
