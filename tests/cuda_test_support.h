// Shared helpers of the [cuda] tests: a CPU backend and a CUDA backend side by side,
// "twin" tensors that hold the same seeded bytes on both, read-back of a view as floats,
// and a comparison that reports the shape, the worst error and the first mismatches.
// Every helper works without a device; the tests return early (SUCCEED, and one warning
// with the CUDA runtime's reason) when no device is usable, so the suite passes on
// machines without a GPU — unless DECODELAB_REQUIRE_CUDA=1 (scripts/gpu-check.sh sets
// it): then a missing device fails every such test with the runtime's reason, so a GPU
// check cannot pass by skipping.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/device_buffer.h"
#include "engine/base/dtype.h"
#include "engine/base/tensor.h"

namespace decodelab::cuda_test {

struct Devices {
  std::unique_ptr<Backend> cpu;
  std::unique_ptr<Backend> cuda;
  OpId next_id = 1;
  OpId id() { return next_id++; }
};

// DECODELAB_REQUIRE_CUDA set to anything but "" or "0".
inline bool cuda_required() {
  const char* value = std::getenv("DECODELAB_REQUIRE_CUDA");
  return value && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

// What a [cuda] test does when no device is usable: fail (required) or skip, and why.
struct MissingDevice {
  bool fail = false;
  std::string message;
};
inline MissingDevice missing_device(const std::string& reason, bool required) {
  if (required) return {true, "DECODELAB_REQUIRE_CUDA=1 and no usable CUDA device: " + reason};
  return {false, "[cuda] tests skipped, no usable CUDA device: " + reason};
}

// Fails or skips the current test for a missing device; a skip warns once per process.
inline void report_missing_device() {
  const MissingDevice missing = missing_device(cuda_unavailable_reason(), cuda_required());
  if (missing.fail) FAIL(missing.message);
  static bool warned = false;
  if (!warned) WARN(missing.message);
  warned = true;
  SUCCEED(missing.message);
}

// Both backends, or nothing when this machine has no usable CUDA device (or build).
inline std::optional<Devices> open_devices(const BackendOptions& cuda_options = {}) {
  if (!cuda_device_available()) return std::nullopt;
  Devices devices;
  devices.cpu = make_backend(BackendKind::Cpu, BackendOptions{});
  devices.cuda = make_backend(BackendKind::Cuda, cuda_options);
  return devices;
}

#define DECODELAB_CUDA_DEVICES_OR_SKIP(devices, ...)                        \
  auto devices##_maybe = ::decodelab::cuda_test::open_devices(__VA_ARGS__); \
  if (!devices##_maybe) {                                                  \
    ::decodelab::cuda_test::report_missing_device();                       \
    return;                                                                \
  }                                                                        \
  ::decodelab::cuda_test::Devices& devices = *devices##_maybe

// The same storage on both backends; views are described once and placed on either.
struct Twin {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;   // elements
  int64_t storage_elements = 0;   // elements the storage holds (>= what the view reaches)
  std::vector<uint8_t> host;      // initial bytes
  DeviceBuffer cpu_buffer;
  DeviceBuffer cuda_buffer;

  Tensor view(void* data) const {
    Tensor tensor;
    tensor.data = data;
    tensor.dtype = dtype;
    tensor.rank = static_cast<int>(shape.size());
    for (size_t axis = 0; axis < shape.size(); ++axis) {
      tensor.shape[axis] = shape[axis];
      tensor.strides[axis] = strides[axis];
    }
    return tensor;
  }
  Tensor on_cpu() const { return view(cpu_buffer.get()); }
  Tensor on_cuda() const { return view(cuda_buffer.get()); }
};

inline std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int axis = static_cast<int>(shape.size()) - 2; axis >= 0; --axis) strides[axis] = strides[axis + 1] * shape[axis + 1];
  return strides;
}

inline int64_t reach(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t last = 0;
  for (size_t axis = 0; axis < shape.size(); ++axis) last += (shape[axis] - 1) * strides[axis];
  return last + 1;
}

// A twin whose storage holds `values` (one per storage element, converted to dtype).
inline Twin make_twin(Devices& devices, DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides,
                      const std::vector<float>& values) {
  Twin twin;
  twin.dtype = dtype;
  twin.shape = std::move(shape);
  twin.strides = strides.empty() ? contiguous_strides(twin.shape) : std::move(strides);
  twin.storage_elements = static_cast<int64_t>(values.size());
  REQUIRE(twin.storage_elements >= reach(twin.shape, twin.strides));
  const size_t bytes = values.size() * dtype_size(dtype);
  twin.host.resize(bytes);
  for (size_t i = 0; i < values.size(); ++i) store_from_float(twin.host.data(), dtype, i, values[i]);
  twin.cpu_buffer = DeviceBuffer(*devices.cpu, bytes);
  twin.cuda_buffer = DeviceBuffer(*devices.cuda, bytes);
  devices.cpu->upload(twin.cpu_buffer.get(), twin.host.data(), bytes);
  devices.cuda->upload(twin.cuda_buffer.get(), twin.host.data(), bytes);
  return twin;
}

inline std::vector<float> uniform_values(int64_t count, uint64_t seed, float low = -1.0f, float high = 1.0f) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& value : values) value = distribution(generator);
  return values;
}

inline std::vector<float> integer_values(int64_t count, uint64_t seed, int low, int high) {
  std::mt19937_64 generator(seed);
  std::uniform_int_distribution<int> distribution(low, high);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& value : values) value = static_cast<float>(distribution(generator));
  return values;
}

// A dense twin of `shape` filled with seeded uniform values.
inline Twin random_twin(Devices& devices, DType dtype, std::vector<int64_t> shape, uint64_t seed) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return make_twin(devices, dtype, std::move(shape), {}, uniform_values(count, seed));
}

// The view's logical elements (row-major order) as floats, read back from one backend.
inline std::vector<float> read_view(Backend& backend, const Twin& twin, const void* data, Devices& devices) {
  std::vector<uint8_t> storage(static_cast<size_t>(twin.storage_elements) * dtype_size(twin.dtype));
  backend.copy_to_host(storage.data(), data, storage.size(), true, devices.id());
  int64_t count = 1;
  for (int64_t dim : twin.shape) count *= dim;
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t linear = 0; linear < count; ++linear) {
    int64_t rest = linear;
    int64_t offset = 0;
    for (int axis = static_cast<int>(twin.shape.size()) - 1; axis >= 0; --axis) {
      offset += (rest % twin.shape[axis]) * twin.strides[axis];
      rest /= twin.shape[axis];
    }
    if (twin.dtype == DType::I32) {
      int32_t integer;
      std::memcpy(&integer, storage.data() + offset * 4, 4);
      values[static_cast<size_t>(linear)] = static_cast<float>(integer);
    } else {
      values[static_cast<size_t>(linear)] = load_as_float(storage.data(), twin.dtype, static_cast<size_t>(offset));
    }
  }
  return values;
}

inline std::vector<float> read_cpu(Devices& devices, const Twin& twin) {
  return read_view(*devices.cpu, twin, twin.cpu_buffer.get(), devices);
}
inline std::vector<float> read_cuda(Devices& devices, const Twin& twin) {
  return read_view(*devices.cuda, twin, twin.cuda_buffer.get(), devices);
}

// Tolerance |cuda - cpu| <= absolute + relative * |cpu|.
struct Tolerance {
  double absolute;
  double relative;
};

// A couple of units in the last place of the output dtype: both backends compute in
// fp32 and round once, so they differ only where fp32 sums or libm calls differ.
inline Tolerance rounding_tolerance(DType dtype, double magnitude = 1.0) {
  switch (dtype) {
    case DType::F16: return {2e-3 * magnitude, 2.0 / 1024};
    case DType::BF16: return {1.6e-2 * magnitude, 2.0 / 128};
    case DType::I32: return {0.0, 0.0};
    default: return {2e-5 * magnitude, 2e-5};
  }
}

inline void expect_close(const std::vector<float>& expected, const std::vector<float>& actual, Tolerance tolerance,
                         const std::string& what) {
  REQUIRE(expected.size() == actual.size());
  size_t mismatches = 0;
  double worst = 0.0;
  size_t worst_index = 0;
  std::ostringstream first;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double error = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    const bool both_nan = std::isnan(expected[i]) && std::isnan(actual[i]);
    const bool bad = !both_nan && !(error <= tolerance.absolute + tolerance.relative * std::fabs(expected[i]));
    if (!both_nan && (error > worst || std::isnan(error))) {
      worst = std::isnan(error) ? INFINITY : error;
      worst_index = i;
    }
    if (bad && ++mismatches <= 5) first << "  [" << i << "] cpu " << expected[i] << " cuda " << actual[i] << "\n";
  }
  INFO(what << ": " << expected.size() << " values, worst error " << worst << " at [" << worst_index
            << "], tolerance " << tolerance.absolute << " + " << tolerance.relative << "·|cpu|, " << mismatches
            << " mismatches\n" << first.str());
  CHECK(mismatches == 0);
}

inline std::string dtype_case(DType dtype) { return dtype_name(dtype); }

}  // namespace decodelab::cuda_test
