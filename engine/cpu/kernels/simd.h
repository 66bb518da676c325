// Vector helpers shared by the CPU kernels: one float vector type (16 lanes with AVX-512,
// 8 with AVX2+FMA+F16C, 8 emulated lanes otherwise), loads that widen fp16/bf16 in
// registers, stores that round to nearest even exactly like engine/base/dtype.h's scalars, a
// fixed-order horizontal sum, and a vector exp.
// The one non-obvious choice: every kernel is written once against these functions, so a
// dot product has one accumulation order (lane-wise FMA over K, then vsum) whatever the
// storage dtype. That is what makes an fp32 matmul of widened half values bitwise equal
// to the half-precision one.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "engine/base/dtype.h"

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
// GCC 12 warns inside its own AVX-512 headers (the _mm512_undefined_* idiom, GCC bug
// 105593); the warning's location is the header, so silencing it around the include works.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

namespace decodelab::cpu {

#if defined(__AVX512F__)
#define DECODELAB_SIMD_AVX512 1
using VFloat = __m512;
inline constexpr int kLanes = 16;
inline constexpr const char* kSimdName = "AVX-512";

inline VFloat vzero() { return _mm512_setzero_ps(); }
inline VFloat vbroadcast(float value) { return _mm512_set1_ps(value); }
inline VFloat vload(const float* source) { return _mm512_loadu_ps(source); }
inline void vstore(float* destination, VFloat value) { _mm512_storeu_ps(destination, value); }
inline VFloat vadd(VFloat a, VFloat b) { return _mm512_add_ps(a, b); }
inline VFloat vsub(VFloat a, VFloat b) { return _mm512_sub_ps(a, b); }
inline VFloat vmul(VFloat a, VFloat b) { return _mm512_mul_ps(a, b); }
inline VFloat vdiv(VFloat a, VFloat b) { return _mm512_div_ps(a, b); }
// a * b + acc with one rounding.
inline VFloat vfma(VFloat a, VFloat b, VFloat acc) { return _mm512_fmadd_ps(a, b, acc); }
// max/min return b when either is NaN (the x86 rule); callers put the value to keep second.
inline VFloat vmax(VFloat a, VFloat b) { return _mm512_max_ps(a, b); }
inline VFloat vmin(VFloat a, VFloat b) { return _mm512_min_ps(a, b); }
inline float vsum(VFloat value) { return _mm512_reduce_add_ps(value); }
inline float vmax_lanes(VFloat value) { return _mm512_reduce_max_ps(value); }

inline VFloat vload_f16(const uint16_t* source) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(source)));
}
inline VFloat vload_bf16(const uint16_t* source) {
  const __m512i widened = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(source)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(widened, 16));
}
inline void vstore_f16(uint16_t* destination, VFloat value) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(destination),
                      _mm512_cvtps_ph(value, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline void vstore_bf16(uint16_t* destination, VFloat value) {
  // Same integer rounding as float_to_bf16 (VCVTNEPS2BF16 would flush denormals).
  const __m512i word = _mm512_castps_si512(value);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(word, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(word, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
  const __m512i quiet_nan = _mm512_or_si512(_mm512_srli_epi32(word, 16), _mm512_set1_epi32(0x40));
  const __mmask16 is_nan = _mm512_cmp_ps_mask(value, value, _CMP_UNORD_Q);
  const __m512i bits = _mm512_mask_blend_epi32(is_nan, rounded, quiet_nan);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(destination), _mm512_cvtepi32_epi16(bits));
}
// out[i] = vsum(in[i]) for 16 vectors at once, bit for bit for every result that is not
// NaN (which NaN payload survives an add is the compiler's choice, here as in vsum): the
// same pairing tree (lane i + i+8, then + i+4, + i+2, + i+1), run on all sixteen with
// 15·3 shuffles and adds instead of sixteen separate reductions (what a matmul tile
// spends its epilogue on). vsum16_lanes returns them as one vector, lane i = vsum(in[i]).
inline VFloat vsum16_lanes(const VFloat (&in)[16]) {
  VFloat halves[8], quarters[4], eighths[2];
  for (int p = 0; p < 8; ++p) {  // [in_2p: i + i+8 | in_2p+1: i + i+8], 8 lanes each
    halves[p] = _mm512_add_ps(_mm512_shuffle_f32x4(in[2 * p], in[2 * p + 1], 0xEE),
                              _mm512_shuffle_f32x4(in[2 * p], in[2 * p + 1], 0x44));
  }
  for (int p = 0; p < 4; ++p) {  // 128-bit lanes: [h_2p.a, h_2p.b, h_2p+1.a, h_2p+1.b], each + its i+4
    quarters[p] = _mm512_add_ps(_mm512_shuffle_f32x4(halves[2 * p], halves[2 * p + 1], 0xDD),
                                _mm512_shuffle_f32x4(halves[2 * p], halves[2 * p + 1], 0x88));
  }
  for (int p = 0; p < 2; ++p) {  // within each 128-bit lane: [x0+x2, x1+x3] of two vectors
    eighths[p] = _mm512_add_ps(_mm512_shuffle_ps(quarters[2 * p], quarters[2 * p + 1], 0x44),
                               _mm512_shuffle_ps(quarters[2 * p], quarters[2 * p + 1], 0xEE));
  }
  // (x0+x2) + (x1+x3)
  const VFloat sums = _mm512_add_ps(_mm512_shuffle_ps(eighths[0], eighths[1], 0x88),
                                    _mm512_shuffle_ps(eighths[0], eighths[1], 0xDD));
  // The shuffles leave input 4·r + q's sum in lane 4·q + r: transpose back on the way out.
  const __m512i transpose = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(transpose, sums);
}
inline void vsum16(const VFloat (&in)[16], float* out) { _mm512_storeu_ps(out, vsum16_lanes(in)); }

// Round-to-nearest integer values, and value * 2^exponent for integral exponents
// (over/underflowing like the true result).
inline VFloat vround_int(VFloat value) {
  return _mm512_roundscale_ps(value, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
inline VFloat vscale_pow2(VFloat value, VFloat exponent) { return _mm512_scalef_ps(value, exponent); }
// Index of the first lane where a == b, or -1.
inline int vfirst_equal(VFloat a, VFloat b) {
  const unsigned mask = _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ);
  return mask ? __builtin_ctz(mask) : -1;
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define DECODELAB_SIMD_AVX2 1
using VFloat = __m256;
inline constexpr int kLanes = 8;
inline constexpr const char* kSimdName = "AVX2";

inline VFloat vzero() { return _mm256_setzero_ps(); }
inline VFloat vbroadcast(float value) { return _mm256_set1_ps(value); }
inline VFloat vload(const float* source) { return _mm256_loadu_ps(source); }
inline void vstore(float* destination, VFloat value) { _mm256_storeu_ps(destination, value); }
inline VFloat vadd(VFloat a, VFloat b) { return _mm256_add_ps(a, b); }
inline VFloat vsub(VFloat a, VFloat b) { return _mm256_sub_ps(a, b); }
inline VFloat vmul(VFloat a, VFloat b) { return _mm256_mul_ps(a, b); }
inline VFloat vdiv(VFloat a, VFloat b) { return _mm256_div_ps(a, b); }
inline VFloat vfma(VFloat a, VFloat b, VFloat acc) { return _mm256_fmadd_ps(a, b, acc); }
inline VFloat vmax(VFloat a, VFloat b) { return _mm256_max_ps(a, b); }
inline VFloat vmin(VFloat a, VFloat b) { return _mm256_min_ps(a, b); }
inline float vsum(VFloat value) {
  __m128 half = _mm_add_ps(_mm256_castps256_ps128(value), _mm256_extractf128_ps(value, 1));
  half = _mm_add_ps(half, _mm_movehl_ps(half, half));
  half = _mm_add_ss(half, _mm_movehdup_ps(half));
  return _mm_cvtss_f32(half);
}
inline float vmax_lanes(VFloat value) {
  __m128 half = _mm_max_ps(_mm256_castps256_ps128(value), _mm256_extractf128_ps(value, 1));
  half = _mm_max_ps(half, _mm_movehl_ps(half, half));
  half = _mm_max_ss(half, _mm_movehdup_ps(half));
  return _mm_cvtss_f32(half);
}

inline VFloat vload_f16(const uint16_t* source) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(source)));
}
inline VFloat vload_bf16(const uint16_t* source) {
  const __m256i widened = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(source)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(widened, 16));
}
inline void vstore_f16(uint16_t* destination, VFloat value) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(destination), _mm256_cvtps_ph(value, _MM_FROUND_TO_NEAREST_INT));
}
inline void vstore_bf16(uint16_t* destination, VFloat value) {
  const __m256i word = _mm256_castps_si256(value);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(word, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(word, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
  const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(word, 16), _mm256_set1_epi32(0x40));
  const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(value, value, _CMP_UNORD_Q));
  const __m256i bits = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
  // packus works per 128-bit half; reorder the two 64-bit results into the low half.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(destination), _mm256_castsi256_si128(packed));
}
inline VFloat vround_int(VFloat value) { return _mm256_round_ps(value, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
inline VFloat vscale_pow2(VFloat value, VFloat exponent) {
  // 2^e built in the exponent field, split in two factors so |e| up to 252 stays exact.
  const __m256i whole = _mm256_cvtps_epi32(exponent);
  const __m256i first = _mm256_srai_epi32(whole, 1);
  const __m256i second = _mm256_sub_epi32(whole, first);
  const __m256i bias = _mm256_set1_epi32(127);
  const VFloat scale_first = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(first, bias), 23));
  const VFloat scale_second = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(second, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(value, scale_first), scale_second);
}
inline int vfirst_equal(VFloat a, VFloat b) {
  const unsigned mask = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)));
  return mask ? __builtin_ctz(mask) : -1;
}

#else
#define DECODELAB_SIMD_PORTABLE 1
// Portable fallback: eight emulated lanes, the same operation order as the AVX2 path.
struct VFloat {
  float lane[8];
};
inline constexpr int kLanes = 8;
inline constexpr const char* kSimdName = "portable";

template <typename Op>
inline VFloat vmap(VFloat a, VFloat b, Op op) {
  VFloat result;
  for (int i = 0; i < kLanes; ++i) result.lane[i] = op(a.lane[i], b.lane[i]);
  return result;
}
inline VFloat vzero() { return VFloat{}; }
inline VFloat vbroadcast(float value) {
  VFloat result;
  for (float& lane : result.lane) lane = value;
  return result;
}
inline VFloat vload(const float* source) {
  VFloat result;
  std::memcpy(result.lane, source, sizeof result.lane);
  return result;
}
inline void vstore(float* destination, VFloat value) { std::memcpy(destination, value.lane, sizeof value.lane); }
inline VFloat vadd(VFloat a, VFloat b) {
  return vmap(a, b, [](float x, float y) { return x + y; });
}
inline VFloat vsub(VFloat a, VFloat b) {
  return vmap(a, b, [](float x, float y) { return x - y; });
}
inline VFloat vmul(VFloat a, VFloat b) {
  return vmap(a, b, [](float x, float y) { return x * y; });
}
inline VFloat vdiv(VFloat a, VFloat b) {
  return vmap(a, b, [](float x, float y) { return x / y; });
}
inline VFloat vfma(VFloat a, VFloat b, VFloat acc) {
  VFloat result;
  for (int i = 0; i < kLanes; ++i) result.lane[i] = std::fma(a.lane[i], b.lane[i], acc.lane[i]);
  return result;
}
inline VFloat vmax(VFloat a, VFloat b) {
  return vmap(a, b, [](float x, float y) { return x > y ? x : y; });
}
inline VFloat vmin(VFloat a, VFloat b) {
  return vmap(a, b, [](float x, float y) { return x < y ? x : y; });
}
inline float vsum(VFloat value) {
  float quad[4];
  for (int i = 0; i < 4; ++i) quad[i] = value.lane[i] + value.lane[i + 4];
  const float pair0 = quad[0] + quad[2];
  const float pair1 = quad[1] + quad[3];
  return pair0 + pair1;
}
inline float vmax_lanes(VFloat value) {
  float best = value.lane[0];
  for (float lane : value.lane) best = lane > best ? lane : best;
  return best;
}
inline VFloat vload_f16(const uint16_t* source) {
  VFloat result;
  for (int i = 0; i < kLanes; ++i) result.lane[i] = fp16_to_float(source[i]);
  return result;
}
inline VFloat vload_bf16(const uint16_t* source) {
  VFloat result;
  for (int i = 0; i < kLanes; ++i) result.lane[i] = bf16_to_float(source[i]);
  return result;
}
inline void vstore_f16(uint16_t* destination, VFloat value) {
  for (int i = 0; i < kLanes; ++i) destination[i] = float_to_fp16(value.lane[i]);
}
inline void vstore_bf16(uint16_t* destination, VFloat value) {
  for (int i = 0; i < kLanes; ++i) destination[i] = float_to_bf16(value.lane[i]);
}
inline VFloat vround_int(VFloat value) {
  VFloat result;
  for (int i = 0; i < kLanes; ++i) result.lane[i] = std::nearbyint(value.lane[i]);
  return result;
}
inline VFloat vscale_pow2(VFloat value, VFloat exponent) {
  VFloat result;
  for (int i = 0; i < kLanes; ++i) {
    result.lane[i] =
        std::isnan(exponent.lane[i]) ? exponent.lane[i] : std::ldexp(value.lane[i], static_cast<int>(exponent.lane[i]));
  }
  return result;
}
inline int vfirst_equal(VFloat a, VFloat b) {
  for (int i = 0; i < kLanes; ++i)
    if (a.lane[i] == b.lane[i]) return i;
  return -1;
}
#endif

// --- dtype-generic loads and stores (D is a float storage dtype) ---

template <DType D>
inline VFloat vload_as(const void* base, int64_t index) {
  if constexpr (D == DType::F32)
    return vload(static_cast<const float*>(base) + index);
  else if constexpr (D == DType::F16)
    return vload_f16(static_cast<const uint16_t*>(base) + index);
  else
    return vload_bf16(static_cast<const uint16_t*>(base) + index);
}

template <DType D>
inline void vstore_as(void* base, int64_t index, VFloat value) {
  if constexpr (D == DType::F32)
    vstore(static_cast<float*>(base) + index, value);
  else if constexpr (D == DType::F16)
    vstore_f16(static_cast<uint16_t*>(base) + index, value);
  else
    vstore_bf16(static_cast<uint16_t*>(base) + index, value);
}

// The first `count` (< kLanes) elements, the other lanes zero. With AVX-512 a masked
// load (the lanes past `count` are never read), so that no function call sits inside a
// kernel's loop: a call there makes the compiler keep the loop's accumulators in memory.
template <DType D>
inline VFloat vload_partial_as(const void* base, int64_t index, int count) {
#if defined(DECODELAB_SIMD_AVX512) && defined(__AVX512BW__) && defined(__AVX512VL__)
  const __mmask16 mask = static_cast<__mmask16>((1u << count) - 1u);
  if constexpr (D == DType::F32) {
    return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(base) + index);
  } else {
    const __m256i bits = _mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(base) + index);
    if constexpr (D == DType::F16) return _mm512_cvtph_ps(bits);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
#else
  alignas(64) float lanes[kLanes] = {};
  for (int i = 0; i < count; ++i) lanes[i] = load_as_float(base, D, index + i);
  return vload(lanes);
#endif
}

template <DType D>
inline void vstore_partial_as(void* base, int64_t index, VFloat value, int count) {
  alignas(64) float lanes[kLanes];
  vstore(lanes, value);
  for (int i = 0; i < count; ++i) store_from_float(base, D, index + i, lanes[i]);
}

// One value rounded to fp16 bits, as float_to_fp16 does, inline where F16C is there.
inline uint16_t f16_bits(float value) {
#if defined(__F16C__)
  return _cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT);
#else
  return float_to_fp16(value);
#endif
}

// Runtime-dtype versions for memory-bound kernels (the switch is perfectly predicted).
inline VFloat vload_dt(DType dtype, const void* base, int64_t index) {
  switch (dtype) {
    case DType::F16:
      return vload_as<DType::F16>(base, index);
    case DType::BF16:
      return vload_as<DType::BF16>(base, index);
    default:
      return vload_as<DType::F32>(base, index);
  }
}
inline void vstore_dt(DType dtype, void* base, int64_t index, VFloat value) {
  switch (dtype) {
    case DType::F16:
      vstore_as<DType::F16>(base, index, value);
      break;
    case DType::BF16:
      vstore_as<DType::BF16>(base, index, value);
      break;
    default:
      vstore_as<DType::F32>(base, index, value);
      break;
  }
}
// Loads `count` elements (1..kLanes), zero-filling the rest.
inline VFloat vload_n(DType dtype, const void* base, int64_t index, int count) {
  if (count == kLanes) return vload_dt(dtype, base, index);
  alignas(64) float lanes[kLanes] = {};
  for (int i = 0; i < count; ++i) lanes[i] = load_as_float(base, dtype, index + i);
  return vload(lanes);
}
inline void vstore_n(DType dtype, void* base, int64_t index, VFloat value, int count) {
  if (count == kLanes) return vstore_dt(dtype, base, index, value);
  alignas(64) float lanes[kLanes];
  vstore(lanes, value);
  for (int i = 0; i < count; ++i) store_from_float(base, dtype, index + i, lanes[i]);
}
// round_to(dtype, ·) on every lane: the rounding an eager framework does between ops.
inline VFloat vround_to(DType dtype, VFloat value) {
  if (dtype == DType::F32) return value;
  alignas(64) uint16_t bits[kLanes];
  if (dtype == DType::F16) {
    vstore_f16(bits, value);
    return vload_f16(bits);
  }
  vstore_bf16(bits, value);
  return vload_bf16(bits);
}

// e^x to about 2 ulp: x = n·ln2 + r, |r| <= ln2/2, e^r by its degree-6 Taylor polynomial
// (Horner, FMA), then scaled by 2^n. Overflows to +inf, underflows to 0, keeps NaN.
inline VFloat vexp(VFloat x) {
  x = vmin(vbroadcast(89.0f), vmax(vbroadcast(-104.0f), x));  // NaN passes (second operand)
  const VFloat n = vround_int(vmul(x, vbroadcast(1.44269504088896341f)));
  VFloat r = vfma(n, vbroadcast(-0.693145751953125f), x);  // ln2 split in two: exact n·ln2_hi
  r = vfma(n, vbroadcast(-1.42860682030941723212e-6f), r);
  VFloat p = vbroadcast(1.0f / 720.0f);
  p = vfma(p, r, vbroadcast(1.0f / 120.0f));
  p = vfma(p, r, vbroadcast(1.0f / 24.0f));
  p = vfma(p, r, vbroadcast(1.0f / 6.0f));
  p = vfma(p, r, vbroadcast(0.5f));
  p = vfma(p, r, vbroadcast(1.0f));
  p = vfma(p, r, vbroadcast(1.0f));
  return vscale_pow2(p, n);
}

// Makes the compiler hold `value` in a vector register: it would otherwise fold a loaded
// chunk that several FMAs share into each FMA as a memory operand, turning one load into
// several and making a register tile bound by the load ports instead of the FMA units.
inline void keep_in_register([[maybe_unused]] VFloat& value) {
#if defined(DECODELAB_SIMD_AVX512) || defined(DECODELAB_SIMD_AVX2)
  asm("" : "+v"(value));
#endif
}

// A read prefetch (a hint: any address is allowed) for data used once (non-temporal: kept out of the outer caches where
// the CPU supports it), for streaming weights.
inline void prefetch_stream(const void* address) { __builtin_prefetch(address, 0, 0); }
// A read prefetch into every cache level (prefetcht0), for data about to be used.
inline void prefetch_near(const void* address) { __builtin_prefetch(address, 0, 3); }
// A read prefetch into the outer caches, not L1 (prefetcht1), for data used a while later.
inline void prefetch_far(const void* address) { __builtin_prefetch(address, 0, 2); }

inline int64_t round_up_to_lanes(int64_t count) { return (count + kLanes - 1) / kLanes * kLanes; }

}  // namespace decodelab::cpu
