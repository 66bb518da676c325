// Shared helpers for the CPU backend tests: a fixture that owns a backend and the device
// buffers a test makes, seeded random values already rounded to a dtype (so a double
// reference sees exactly what the kernel sees), and comparisons that report the shape,
// the worst error and the first mismatches.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/device_buffer.h"

namespace decodelab::testing {

// Seeded values in [low, high), rounded through `dtype`.
inline std::vector<float> random_values(size_t count, DType dtype, uint32_t seed, float low = -1.0f,
                                        float high = 1.0f) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> values(count);
  for (float& value : values) value = round_to(dtype, uniform(generator));
  return values;
}

struct CpuFixture {
  std::unique_ptr<Backend> backend = make_cpu_backend(BackendOptions{});
  std::vector<DeviceBuffer> buffers;
  OpId next_id = 1;

  OpId id() { return next_id++; }

  void* allocate(size_t bytes) {
    buffers.emplace_back(*backend, bytes);
    return buffers.back().get();
  }

  Tensor tensor(DType dtype, std::initializer_list<int64_t> dims) {
    int64_t count = 1;
    for (int64_t dim : dims) count *= dim;
    return Tensor::contiguous(allocate(static_cast<size_t>(std::max<int64_t>(count, 1)) * dtype_size(dtype)), dtype,
                              dims);
  }

  // A contiguous tensor holding `values` (converted to dtype).
  Tensor upload(DType dtype, std::initializer_list<int64_t> dims, const std::vector<float>& values) {
    Tensor view = tensor(dtype, dims);
    write(view, values);
    return view;
  }

  Tensor upload_i32(std::initializer_list<int64_t> dims, const std::vector<int32_t>& values) {
    Tensor view = tensor(DType::I32, dims);
    backend->upload(view.data, values.data(), values.size() * sizeof(int32_t));
    return view;
  }

  // Writes values (row-major order of the view's shape) into a contiguous view.
  void write(const Tensor& view, const std::vector<float>& values) {
    std::vector<unsigned char> bytes(values.size() * dtype_size(view.dtype));
    for (size_t i = 0; i < values.size(); ++i) store_from_float(bytes.data(), view.dtype, i, values[i]);
    backend->upload(view.data, bytes.data(), bytes.size());
  }

  // Reads a contiguous view back as floats (through copy_to_host, which syncs).
  std::vector<float> read(const Tensor& view) {
    std::vector<unsigned char> bytes(view.bytes());
    backend->copy_to_host(bytes.data(), view.data, bytes.size(), true, id());
    std::vector<float> values(static_cast<size_t>(view.numel()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = load_as_float(bytes.data(), view.dtype, i);
    return values;
  }

  std::vector<int32_t> read_i32(const Tensor& view) {
    std::vector<int32_t> values(static_cast<size_t>(view.numel()));
    backend->copy_to_host(values.data(), view.data, values.size() * sizeof(int32_t), true, id());
    return values;
  }
};

// Unit roundoff-based relative tolerance of a storage dtype, with headroom for one or
// two intermediate roundings: fp32 1e-5, fp16 2e-3, bf16 1.6e-2.
inline double relative_tolerance(DType dtype) {
  switch (dtype) {
    case DType::F16:
      return 2e-3;
    case DType::BF16:
      return 1.6e-2;
    default:
      return 1e-5;
  }
}

// Compares actual with expected element-wise; allowed(i) is element i's absolute bound.
// Returns "" when every element is within bounds, else a report for the failure message.
inline std::string compare(const std::vector<float>& actual, const std::vector<double>& expected,
                           const std::function<double(size_t)>& allowed, const std::string& what) {
  std::ostringstream report;
  size_t mismatches = 0;
  double worst = 0.0;
  size_t worst_index = 0;
  std::ostringstream first;
  const size_t count = std::min(actual.size(), expected.size());
  for (size_t i = 0; i < count; ++i) {
    const double error = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    const bool bad = !(error <= allowed(i)) && !(std::isnan(actual[i]) && std::isnan(expected[i]));
    if (error > worst || (bad && std::isnan(error))) {
      worst = error;
      worst_index = i;
    }
    if (bad && mismatches++ < 5) {
      first << "\n  [" << i << "] got " << actual[i] << ", expected " << expected[i] << " (allowed " << allowed(i)
            << ")";
    }
  }
  if (actual.size() != expected.size()) {
    report << what << ": size " << actual.size() << " != expected " << expected.size();
    return report.str();
  }
  if (mismatches == 0) return "";
  report << what << ": " << mismatches << " of " << count << " elements out of tolerance; worst error " << worst
         << " at [" << worst_index << "]; first mismatches:" << first.str();
  return report.str();
}

// Bitwise comparison of two float vectors; "" when identical.
inline std::string compare_bitwise(const std::vector<float>& actual, const std::vector<float>& expected,
                                   const std::string& what) {
  if (actual.size() != expected.size()) {
    return what + ": size " + std::to_string(actual.size()) + " != " + std::to_string(expected.size());
  }
  size_t mismatches = 0;
  std::ostringstream first;
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::memcmp(&actual[i], &expected[i], sizeof(float)) != 0 && mismatches++ < 5) {
      first << "\n  [" << i << "] " << actual[i] << " vs " << expected[i];
    }
  }
  if (mismatches == 0) return "";
  return what + ": " + std::to_string(mismatches) + " of " + std::to_string(actual.size()) +
         " elements differ bitwise; first:" + first.str();
}

}  // namespace decodelab::testing
