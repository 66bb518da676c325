// The table through which the CPU backend calls one compiled variant of its kernels
// (kernel_variant.h). kernel_table.cpp is compiled with each variant's flags and fills a
// table with that variant's functions; kernel_dispatch.cpp defines the functions of
// kernels.h as calls through the chosen table.
//
// The one non-obvious part is in the build (cmake/cpu_kernels.cmake): each variant's
// objects are linked into one relocatable object in which every symbol but its table
// function is made local. Inline functions and template instantiations (simd.h's, the
// standard library's) are otherwise merged across variants by the linker, which keeps one
// copy — possibly the AVX-512 one, called on a CPU without AVX-512.
#pragma once

#include "engine/cpu/kernels/kernels.h"

#define DECODELAB_CPU_KERNEL_LIST(X)                                                                            \
  X(check_matmul) X(matmul) X(check_attention) X(attention) X(check_kv_store) X(kv_store) X(check_rmsnorm)      \
  X(rmsnorm) X(check_rope) X(rope) X(check_embedding) X(embedding) X(check_argmax) X(argmax) X(check_add)       \
  X(add) X(check_swiglu) X(swiglu) X(check_cast) X(cast) X(check_copy) X(copy) X(check_positions)               \
  X(fill_positions) X(advance_positions) X(fma_probe) X(fma_probe_flops)

namespace decodelab::cpu {

struct KernelTable {
  const char* isa;  // kSimdName of the variant's simd.h
#define DECODELAB_CPU_KERNEL_POINTER(name) decltype(&::decodelab::cpu::name) name;
  DECODELAB_CPU_KERNEL_LIST(DECODELAB_CPU_KERNEL_POINTER)
#undef DECODELAB_CPU_KERNEL_POINTER
};

}  // namespace decodelab::cpu

// One per compiled variant, named decodelab_cpu_kernels_<variant>: C linkage, so that the
// build can keep exactly this symbol global by its plain name.
#define DECODELAB_CPU_KERNEL_TABLE_FUNCTION(variant) decodelab_cpu_kernels_##variant
