// Storage dtypes of the engine and scalar conversions between them.
// fp16/bf16 are stored as raw 16-bit patterns; arithmetic is always done in fp32
// ("converted in registers"). Rounding to fp16/bf16 is round-to-nearest-even, as
// torch and CUDA do, so that emulated half-precision elementwise ops round like theirs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace decodelab {

enum class DType : uint8_t { F32, F16, BF16, I32 };

inline size_t dtype_size(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16 ? 2 : 4; }

// Names as the scenarios spell them: fp32, fp16, bf16, i32. Inline, so that the CUDA
// library, which links no engine code, names dtypes with the same words.
inline const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "fp32";
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
  }
  return "?";
}
std::optional<DType> parse_dtype(std::string_view name);
inline bool is_half(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16; }

inline float bf16_to_float(uint16_t bits) {
  uint32_t word = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

inline uint16_t float_to_bf16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  if ((word & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((word >> 16) | 0x40);  // quiet NaN
  word += 0x7fffu + ((word >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(word >> 16);
}

float fp16_to_float(uint16_t bits);
uint16_t float_to_fp16(float value);

// Round a float through a storage dtype and back (identity for F32).
inline float round_to(DType dtype, float value) {
  switch (dtype) {
    case DType::F16: return fp16_to_float(float_to_fp16(value));
    case DType::BF16: return bf16_to_float(float_to_bf16(value));
    default: return value;
  }
}

// Element access for untyped buffers (slow path: references, tests, small ops).
inline float load_as_float(const void* data, DType dtype, size_t index) {
  switch (dtype) {
    case DType::F32: return static_cast<const float*>(data)[index];
    case DType::F16: return fp16_to_float(static_cast<const uint16_t*>(data)[index]);
    case DType::BF16: return bf16_to_float(static_cast<const uint16_t*>(data)[index]);
    case DType::I32: return static_cast<float>(static_cast<const int32_t*>(data)[index]);
  }
  return 0.0f;
}

inline void store_from_float(void* data, DType dtype, size_t index, float value) {
  switch (dtype) {
    case DType::F32: static_cast<float*>(data)[index] = value; break;
    case DType::F16: static_cast<uint16_t*>(data)[index] = float_to_fp16(value); break;
    case DType::BF16: static_cast<uint16_t*>(data)[index] = float_to_bf16(value); break;
    case DType::I32: static_cast<int32_t*>(data)[index] = static_cast<int32_t>(value); break;
  }
}

}  // namespace decodelab
