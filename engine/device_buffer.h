// RAII ownership of one device allocation; the rest of the engine holds Tensor views.
#pragma once

#include <cstddef>
#include <utility>

#include "engine/backend.h"

namespace decodelab {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend& backend, size_t bytes) : backend_(&backend), bytes_(bytes) {
    pointer_ = bytes ? backend.allocate(bytes) : nullptr;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      backend_ = std::exchange(other.backend_, nullptr);
      pointer_ = std::exchange(other.pointer_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { reset(); }

  void reset() {
    if (backend_ && pointer_) backend_->release(pointer_);
    pointer_ = nullptr;
    bytes_ = 0;
  }
  void* get() const { return pointer_; }
  size_t bytes() const { return bytes_; }

 private:
  Backend* backend_ = nullptr;
  void* pointer_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace decodelab
