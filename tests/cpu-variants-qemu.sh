#!/usr/bin/env bash
# The test binary, built on this machine, run on emulated older x86-64 CPUs (qemu user mode):
# a Haswell (AVX2, no AVX-512) must take the avx2 kernels and refuse avx512; a Nehalem (no
# AVX) must take the portable kernels and refuse avx2. On each, the kernel-variant tests and
# the matmul reference test must pass: the binary is right on a CPU with fewer instruction
# sets than the one that built it, not only fast on its own.
#
#   tests/cpu-variants-qemu.sh DECODELAB_TESTS_BINARY
set -euo pipefail
binary=${1:?usage: cpu-variants-qemu.sh DECODELAB_TESTS_BINARY}
qemu=$(command -v qemu-x86_64-static || command -v qemu-x86_64 || true)
if [[ -z "$qemu" ]]; then
  echo "cpu-variants-qemu: qemu-x86_64 not found (scripts/setup.sh, extra qemu)" >&2
  exit 1
fi
spec='[kernel_variant],cpu matmul matches a double reference'
failures=0

expect() {  # expect CPU VARIANT STATUS: DECODELAB_CPU_KERNELS=VARIANT exits with STATUS on CPU
  local cpu=$1 variant=$2 want=$3 got=0
  DECODELAB_CPU_KERNELS=$variant "$qemu" -cpu "$cpu" "$binary" "$spec" > /tmp/cpu-variants-qemu.$$.log 2>&1 || got=$?
  if [[ $got -eq $want ]]; then
    echo "cpu-variants-qemu: ok   $cpu, kernels $variant: exit $got"
  else
    echo "cpu-variants-qemu: FAIL $cpu, kernels $variant: exit $got, expected $want" >&2
    tail -20 /tmp/cpu-variants-qemu.$$.log >&2
    failures=$((failures + 1))
  fi
  rm -f /tmp/cpu-variants-qemu.$$.log
}

# qemu warns about features its translator lacks (pcid, x2apic...), which these CPUs list.
expect Haswell auto 0
expect Haswell avx2 0
expect Haswell avx512 77
expect Nehalem auto 0
expect Nehalem portable 0
expect Nehalem avx2 77
exit $((failures > 0))
