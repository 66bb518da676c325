// Which build of the CPU kernels this process runs. The kernels (engine/cpu/kernels/kernels.h)
// are compiled once per instruction-set level into the same binary, and the widest one
// this CPU and its OS support is chosen when first used:
//   avx512    AVX-512 F, BW, VL, DQ and CD, with AVX2, FMA, F16C, BMI1/2 (16 float lanes)
//   avx2      AVX2, FMA, F16C, BMI1/2 (8 lanes)
//   portable  no instruction beyond the architecture's baseline (8 emulated lanes)
// (only `portable` on a machine that is not x86-64). DECODELAB_CPU_KERNELS=auto|avx512|
// avx2|portable picks one; asking for one this CPU cannot run is an input error, never a
// crash. The variant in use is part of the CPU backend's device description, so of every
// result. Why one binary holds them all: a build made on one machine (a CI runner, a login
// node) is then right and fast on another, instead of dying on an illegal instruction or
// running the lowest common denominator.
//
// Results differ between variants only in the order of float sums (lanes per vector), so
// within the dtype-scaled tolerances every backend is held to, not bit for bit.
#pragma once

#include <string>
#include <vector>

namespace decodelab::cpu {

// Every variant compiled into this binary, widest first.
std::vector<std::string> compiled_kernel_variants();
// Whether this CPU (and its OS, for the AVX-512 state) can run `variant`.
bool kernel_variant_supported(const std::string& variant);
// The variant this process runs: DECODELAB_CPU_KERNELS, read once, else the preferred one
// (prefer_kernel_variant), else the widest supported. Throws InputError naming the
// variable when it names an unknown variant or one this CPU cannot run.
std::string kernel_variant();
// Whether DECODELAB_CPU_KERNELS names a variant (not unset, empty or "auto"): then it
// decides, and a preference does not.
bool kernel_variant_from_environment();
// The variant to run where DECODELAB_CPU_KERNELS names none: a calibration's choice,
// measured on this machine (profiling/measure/kernel_variant_choice.h); "" goes back to the
// widest. Throws InputError (key `kernel variant`) for a variant this CPU cannot run. No
// kernel may be in flight when it changes.
void prefer_kernel_variant(const std::string& variant);
// Its instruction sets in words ("AVX-512", "AVX2", "portable"), for device descriptions.
std::string kernel_variant_isa();
// The choice behind kernel_variant(), for tests: nullptr, "" or "auto" means the widest
// supported.
std::string parse_kernel_variant(const char* value);

// For tests and A/B measurements in one process: the kernels of `variant` run while this
// lives (no kernel may be in flight when it is made or ends). Throws like kernel_variant().
class ScopedKernelVariant {
 public:
  explicit ScopedKernelVariant(const std::string& variant);
  ~ScopedKernelVariant();
  ScopedKernelVariant(const ScopedKernelVariant&) = delete;
  ScopedKernelVariant& operator=(const ScopedKernelVariant&) = delete;

 private:
  int previous_;
};

}  // namespace decodelab::cpu
