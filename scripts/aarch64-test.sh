#!/usr/bin/env bash
# The CPU backend on 64-bit Arm (the hosts of GH200 and Graviton machines), correct first: builds
# decodelab_tests for aarch64 with Debian's cross compiler (cmake/aarch64-linux-gnu.cmake; the
# portable kernels of engine/cpu/kernels/simd.h, no x86 intrinsics) and runs the tests that check
# numbers under qemu-aarch64-static: every op against its reference, the engine against the
# float64 reference forward, dtype rounding, invariants, the stream, bugs that never change
# results. Needs `DECODELAB_SETUP_EXTRAS=aarch64 scripts/setup.sh` (it also unpacks yaml-cpp's
# arm64 development files into .cross/arm64).
#   scripts/aarch64-test.sh [BUILD_DIR]     (default build-aarch64)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$repo/build-aarch64}"
root="$repo/.cross/arm64"
for tool in aarch64-linux-gnu-g++ qemu-aarch64-static; do
  command -v "$tool" >/dev/null ||
    { echo "aarch64-test: $tool not found (DECODELAB_SETUP_EXTRAS=aarch64 scripts/setup.sh installs it)" >&2; exit 1; }
done
[[ -f "$root/usr/lib/aarch64-linux-gnu/cmake/yaml-cpp/yaml-cpp-config.cmake" ]] ||
  { echo "aarch64-test: $root holds no arm64 yaml-cpp (DECODELAB_SETUP_EXTRAS=aarch64 scripts/setup.sh unpacks it)" >&2; exit 1; }
export DECODELAB_ARM64_ROOT="$root"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DDECODELAB_CUDA=OFF -DDECODELAB_NATIVE=OFF >/dev/null
cmake --build "$build" --target decodelab_tests
file "$build/decodelab_tests" | grep -q "ARM aarch64" ||
  { echo "aarch64-test: $build/decodelab_tests is not an aarch64 binary" >&2; exit 1; }
# The numeric tests; timing tests (roofs, machine checks, benches) are meaningless under emulation.
# The [cli] tests start the decodelab binary, which this machine cannot run without binfmt.
tags=""
for tag in ops numerics invariants cpu bugs generator determinism engine_reference simd stream safetensors hf_checkpoint memory; do
  tags+="${tags:+,}[$tag]~[cli]"
done
started=$SECONDS
# -L /: the arm64 runtime's own loader and libc (see cmake/aarch64-linux-gnu.cmake).
OMP_NUM_THREADS=2 qemu-aarch64-static -L / "$build/decodelab_tests" "$tags" --reporter compact
echo "aarch64-test: passed under qemu in $((SECONDS - started)) s"
