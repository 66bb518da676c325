// The kernels of kernels.h, each a call through the table of the variant this process
// runs (kernel_variant.h, kernel_table.h), and the choice of that variant.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "engine/cpu/kernels/kernel_table.h"
#include "engine/cpu/kernel_variant.h"
#include "engine/base/errors.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#endif

// The variants the build compiled (cmake/cpu_kernels.cmake defines one macro per variant).
#ifdef DECODELAB_CPU_VARIANT_AVX512
extern "C" const decodelab::cpu::KernelTable* DECODELAB_CPU_KERNEL_TABLE_FUNCTION(avx512)();
#endif
#ifdef DECODELAB_CPU_VARIANT_AVX2
extern "C" const decodelab::cpu::KernelTable* DECODELAB_CPU_KERNEL_TABLE_FUNCTION(avx2)();
#endif
extern "C" const decodelab::cpu::KernelTable* DECODELAB_CPU_KERNEL_TABLE_FUNCTION(portable)();

namespace decodelab::cpu {

namespace {

struct Variant {
  const char* name;
  const KernelTable* (*table)();
};

// Widest first: auto takes the first this CPU supports.
constexpr Variant kVariants[] = {
#ifdef DECODELAB_CPU_VARIANT_AVX512
    {"avx512", &DECODELAB_CPU_KERNEL_TABLE_FUNCTION(avx512)},
#endif
#ifdef DECODELAB_CPU_VARIANT_AVX2
    {"avx2", &DECODELAB_CPU_KERNEL_TABLE_FUNCTION(avx2)},
#endif
    {"portable", &DECODELAB_CPU_KERNEL_TABLE_FUNCTION(portable)},
};
constexpr int kVariantCount = static_cast<int>(sizeof kVariants / sizeof kVariants[0]);

#if defined(__x86_64__) || defined(_M_X64)
// What the CPU reports through CPUID, and what the OS saves on a context switch (XCR0):
// an instruction set the OS does not save the registers of cannot be used.
struct X86Features {
  bool avx2 = false, avx512 = false;
};

X86Features read_x86_features() {
  X86Features features;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return features;
  const bool fma = ecx & (1u << 12), osxsave = ecx & (1u << 27), avx = ecx & (1u << 28), f16c = ecx & (1u << 29);
  if (!osxsave || !avx) return features;
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  const bool os_avx = (xcr0_low & 0x6u) == 0x6u;         // SSE and AVX state
  const bool os_avx512 = (xcr0_low & 0xE6u) == 0xE6u;    // and opmask, ZMM0-15 high, ZMM16-31
  if (__get_cpuid_max(0, nullptr) < 7) return features;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const bool bmi1 = ebx & (1u << 3), avx2 = ebx & (1u << 5), bmi2 = ebx & (1u << 8);
  const bool avx512f = ebx & (1u << 16), avx512dq = ebx & (1u << 17), avx512cd = ebx & (1u << 28),
             avx512bw = ebx & (1u << 30), avx512vl = ebx & (1u << 31);
  features.avx2 = os_avx && avx2 && fma && f16c && bmi1 && bmi2;
  features.avx512 = features.avx2 && os_avx512 && avx512f && avx512dq && avx512cd && avx512bw && avx512vl;
  return features;
}
#endif

bool supported(const char* name) {
  if (std::strcmp(name, "portable") == 0) return true;
#if defined(__x86_64__) || defined(_M_X64)
  static const X86Features features = read_x86_features();
  if (std::strcmp(name, "avx2") == 0) return features.avx2;
  if (std::strcmp(name, "avx512") == 0) return features.avx512;
#endif
  return false;
}

// The compiled variants, or only those this CPU runs, as "avx512, avx2, portable".
std::string variant_list(bool supported_only) {
  std::string list;
  for (const Variant& variant : kVariants) {
    if (!supported_only || supported(variant.name)) list += (list.empty() ? "" : ", ") + std::string(variant.name);
  }
  return list;
}

int index_of(const std::string& name) {
  for (int i = 0; i < kVariantCount; ++i) {
    if (name == kVariants[i].name) return i;
  }
  return -1;
}

int checked_index(const std::string& name, const char* key) {
  const int index = index_of(name);
  if (index < 0) {
    throw InputError("environment", 0, key, "expected auto or one of " + variant_list(false) + ", got '" + name + "'");
  }
  if (!supported(kVariants[index].name)) {
    throw InputError("environment", 0, key,
                     "this CPU cannot run the " + name + " kernels; it can run: " + variant_list(true));
  }
  return index;
}

constexpr int kNoOverride = -1;
std::atomic<int> override_variant{kNoOverride};
std::atomic<int> preferred_variant{kNoOverride};

bool names_a_variant(const char* value) { return value != nullptr && *value != '\0' && std::strcmp(value, "auto") != 0; }

int chosen_index() {
  const int forced = override_variant.load(std::memory_order_relaxed);
  if (forced != kNoOverride) return forced;
  static const char* environment = std::getenv("DECODELAB_CPU_KERNELS");
  static const int index = index_of(parse_kernel_variant(environment));
  if (!names_a_variant(environment)) {
    const int preferred = preferred_variant.load(std::memory_order_relaxed);
    if (preferred != kNoOverride) return preferred;
  }
  return index;
}

const KernelTable& active_kernels() { return *kVariants[chosen_index()].table(); }

}  // namespace

std::vector<std::string> compiled_kernel_variants() {
  std::vector<std::string> names;
  for (const Variant& variant : kVariants) names.emplace_back(variant.name);
  return names;
}

bool kernel_variant_supported(const std::string& variant) {
  const int index = index_of(variant);
  return index >= 0 && supported(kVariants[index].name);
}

std::string parse_kernel_variant(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "auto") == 0) {
    for (const Variant& variant : kVariants) {
      if (supported(variant.name)) return variant.name;
    }
    return "portable";
  }
  return kVariants[checked_index(value, "DECODELAB_CPU_KERNELS")].name;
}

std::string kernel_variant() { return kVariants[chosen_index()].name; }

bool kernel_variant_from_environment() { return names_a_variant(std::getenv("DECODELAB_CPU_KERNELS")); }

void prefer_kernel_variant(const std::string& variant) {
  preferred_variant.store(variant.empty() ? kNoOverride : checked_index(variant, "kernel variant"));
}
std::string kernel_variant_isa() { return active_kernels().isa; }

ScopedKernelVariant::ScopedKernelVariant(const std::string& variant)
    : previous_(override_variant.exchange(checked_index(variant, "kernel variant"))) {}
ScopedKernelVariant::~ScopedKernelVariant() { override_variant.store(previous_); }

void check_matmul(const Tensor& x, const Tensor& weight, const Tensor& out) { active_kernels().check_matmul(x, weight, out); }
void matmul(const Tensor& x, const Tensor& weight, const Tensor& out) { active_kernels().matmul(x, weight, out); }
void check_attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions, int rows_per_sequence, const Tensor& out) { active_kernels().check_attention(q, k_cache, v_cache, positions, rows_per_sequence, out); }
void attention(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions, int rows_per_sequence, float scale, const Tensor& out) { active_kernels().attention(q, k_cache, v_cache, positions, rows_per_sequence, scale, out); }
void check_kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions, int rows_per_sequence) { active_kernels().check_kv_store(k_new, v_new, k_cache, v_cache, positions, rows_per_sequence); }
void kv_store(const Tensor& k_new, const Tensor& v_new, const Tensor& k_cache, const Tensor& v_cache, const Tensor& positions, int rows_per_sequence) { active_kernels().kv_store(k_new, v_new, k_cache, v_cache, positions, rows_per_sequence); }
void check_rmsnorm(const Tensor& x, const Tensor& weight, const Tensor& out) { active_kernels().check_rmsnorm(x, weight, out); }
void rmsnorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) { active_kernels().rmsnorm(x, weight, eps, out); }
void check_rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int head_dim) { active_kernels().check_rope(q, k, positions, inv_freq, head_dim); }
void rope(const Tensor& q, const Tensor& k, const Tensor& positions, const Tensor& inv_freq, int head_dim) { active_kernels().rope(q, k, positions, inv_freq, head_dim); }
void check_embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence, const Tensor& out) { active_kernels().check_embedding(table, tokens, positions, rows_per_sequence, out); }
void embedding(const Tensor& table, const Tensor& tokens, const Tensor& positions, int rows_per_sequence, const Tensor& out) { active_kernels().embedding(table, tokens, positions, rows_per_sequence, out); }
void check_argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions) { active_kernels().check_argmax(logits, tokens, positions); }
void argmax(const Tensor& logits, const Tensor& tokens, const Tensor& positions) { active_kernels().argmax(logits, tokens, positions); }
void check_add(const Tensor& a, const Tensor& b, const Tensor& out) { active_kernels().check_add(a, b, out); }
void add(const Tensor& a, const Tensor& b, const Tensor& out) { active_kernels().add(a, b, out); }
void check_swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) { active_kernels().check_swiglu(gate, up, out); }
void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) { active_kernels().swiglu(gate, up, out); }
void check_cast(const Tensor& x, const Tensor& out) { active_kernels().check_cast(x, out); }
void cast(const Tensor& x, const Tensor& out) { active_kernels().cast(x, out); }
void check_copy(const Tensor& src, const Tensor& out) { active_kernels().check_copy(src, out); }
void copy(const Tensor& src, const Tensor& out) { active_kernels().copy(src, out); }
void check_positions(const Tensor& positions, const char* op) { active_kernels().check_positions(positions, op); }
void fill_positions(const Tensor& out, int start, int period) { active_kernels().fill_positions(out, start, period); }
void advance_positions(const Tensor& positions) { active_kernels().advance_positions(positions); }
void fma_probe(int64_t rounds) { active_kernels().fma_probe(rounds); }
double fma_probe_flops(int64_t rounds, int threads) { return active_kernels().fma_probe_flops(rounds, threads); }

}  // namespace decodelab::cpu
