// Scalar fp16 conversion (IEEE binary16, round to nearest even) and dtype names.
// Uses F16C when the compiler targets it; the portable path gives identical results.
#include "engine/base/dtype.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace decodelab {

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "fp32" || name == "float32" || name == "F32") return DType::F32;
  if (name == "fp16" || name == "float16" || name == "F16") return DType::F16;
  if (name == "bf16" || name == "bfloat16" || name == "BF16") return DType::BF16;
  if (name == "i32" || name == "int32" || name == "I32") return DType::I32;
  return std::nullopt;
}

#if defined(__F16C__)
float fp16_to_float(uint16_t bits) { return _cvtsh_ss(bits); }
uint16_t float_to_fp16(float value) { return _cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT); }
#else
float fp16_to_float(uint16_t bits) {
  const uint32_t sign = (bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t word;
  if (exponent == 0x1f) {
    word = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      word = sign;
    } else {  // subnormal: normalise
      int shift = 0;
      while ((mantissa & 0x400u) == 0) { mantissa <<= 1; ++shift; }
      mantissa &= 0x3ffu;
      word = sign | ((113u - shift) << 23) | (mantissa << 13);
    }
  } else {
    word = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

uint16_t float_to_fp16(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  const uint16_t sign = static_cast<uint16_t>((word >> 16) & 0x8000u);
  const uint32_t magnitude = word & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;       // NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;      // overflow (rounds to inf)
  if (magnitude < 0x38800000u) {                            // subnormal or zero in fp16
    if (magnitude < 0x33000000u) return sign;               // below half the smallest subnormal
    const uint32_t exponent = magnitude >> 23;
    const uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exponent;                 // 14..24
    uint32_t half_mantissa = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (half_mantissa & 1u))) ++half_mantissa;
    return sign | static_cast<uint16_t>(half_mantissa);
  }
  uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
  rounded -= 0x38000000u;  // rebias exponent 127 -> 15
  return sign | static_cast<uint16_t>(rounded >> 13);
}
#endif

}  // namespace decodelab
