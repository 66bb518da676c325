// One variant's kernel table (kernel_table.h). Compiled once per variant with
// DECODELAB_CPU_VARIANT set to its name and its instruction-set flags.
#include "engine/cpu/kernels/kernel_table.h"

#include "engine/cpu/kernels/simd.h"

#ifndef DECODELAB_CPU_VARIANT
#error "kernel_table.cpp is compiled once per CPU kernel variant, with DECODELAB_CPU_VARIANT=<name>"
#endif

#define DECODELAB_CPU_TABLE_NAME(variant) DECODELAB_CPU_KERNEL_TABLE_FUNCTION(variant)
#define DECODELAB_CPU_TABLE_NAME_OF(variant) DECODELAB_CPU_TABLE_NAME(variant)

extern "C" const decodelab::cpu::KernelTable* DECODELAB_CPU_TABLE_NAME_OF(DECODELAB_CPU_VARIANT)() {
  using namespace decodelab::cpu;
#define DECODELAB_CPU_KERNEL_ENTRY(name) &::decodelab::cpu::name,
  static const KernelTable table{kSimdName, DECODELAB_CPU_KERNEL_LIST(DECODELAB_CPU_KERNEL_ENTRY)};
#undef DECODELAB_CPU_KERNEL_ENTRY
  return &table;
}
