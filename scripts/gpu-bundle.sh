#!/usr/bin/env bash
# Builds the portable CUDA preset (sm_80 + sm_90, AVX2 baseline CPU code) and makes it
# carryable to a bare GPU machine: every shared library the binaries need that such a
# machine may lack (yaml-cpp, OpenMP, the CUDA runtime and CUPTI of the toolkit we
# compiled against, ...) is copied into build-gpu/lib. Left out on purpose: glibc and the
# C++ runtime (the target has its own, newer ones; ours go to build-gpu/lib/fallback for
# scripts/gpu-check.sh to try only if the binaries do not start), the NVIDIA driver
# (libcuda, which must match the kernel module there) and cuBLAS (about 600 MB; the GPU
# machine has it). Also writes build-gpu/ptxas-summary.txt (registers and spills per
# kernel) and prints what to carry. See docs/gpu.md.
#
# usage: scripts/gpu-bundle.sh [--jobs N]
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=2
if [[ "${1:-}" == "--jobs" ]]; then jobs="${2:?--jobs needs a number}"; fi

build=build-gpu
cmake --preset gpu-portable -DDECODELAB_PTXAS_VERBOSE=ON >/dev/null
# -Xptxas -v prints at compile time only: touch the CUDA sources so the summary is complete.
touch engine/cuda/*.cu
status=0
cmake --build "$build" -j "$jobs" --target decodelab decodelab_tests >"$build/build.log" 2>&1 || status=$?
grep -E "error|warning: |FAILED" "$build/build.log" || true
if (( status != 0 )); then
  echo "gpu-bundle: the build failed (exit $status); see $build/build.log" >&2
  exit 1
fi

# --- register / spill summary of every kernel (sm_90), from the ptxas output -------------
python3 - "$build/build.log" >"$build/ptxas-summary.txt" <<'PY'
import re, subprocess, sys
rows, current = [], None
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"Compiling entry function '(\S+)' for '(sm_\d+)'", line)
    if m:
        current = {"symbol": m.group(1), "arch": m.group(2)}
        rows.append(current)
        continue
    if current is None:
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m:
        current["stack"], current["spill_stores"], current["spill_loads"] = map(int, m.groups())
    m = re.search(r"Used (\d+) registers", line)
    if m:
        current["registers"] = int(m.group(1))
names = subprocess.run(["c++filt"], input="\n".join(r["symbol"] for r in rows),
                       capture_output=True, text=True).stdout.splitlines()
print(f"{'arch':6} {'regs':>4} {'stack':>5} {'spill st/ld':>11}  kernel")
seen = set()
for row, name in zip(rows, names):
    name = name.replace("decodelab::cuda::", "").replace("(anonymous namespace)::", "").split("(")[0]
    key = (row["arch"], name)
    if key in seen:
        continue
    seen.add(key)
    spills = f"{row.get('spill_stores', 0)}/{row.get('spill_loads', 0)}"
    print(f"{row['arch']:6} {row.get('registers', 0):4d} {row.get('stack', 0):5d} {spills:>11}  {name}")
PY

# --- shared libraries --------------------------------------------------------------------
lib="$build/lib"
rm -rf "$lib"
mkdir -p "$lib/fallback"
skip_re='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libutil|libresolv|libcuda\.so|libnvidia-|libcublas)'
fallback_re='^(libstdc\+\+|libgcc_s)'
for binary in "$build/decodelab" "$build/decodelab_tests"; do
  ldd "$binary" | while read -r name arrow path _; do
    [[ "$arrow" == "=>" && -f "$path" ]] || continue
    if [[ "$name" =~ $skip_re ]]; then continue; fi
    if [[ "$name" =~ $fallback_re ]]; then cp -Lf "$path" "$lib/fallback/$name"; continue; fi
    cp -Lf "$path" "$lib/$name"
  done
done
if ldd "$build/decodelab" | grep -q "not found"; then
  echo "gpu-bundle: unresolved libraries here:" >&2
  ldd "$build/decodelab" | grep "not found" >&2
  exit 1
fi

# --- what the binaries ask of the target's C library --------------------------------------
glibc=$(objdump -T "$build/decodelab" "$build/decodelab_tests" "$lib"/*.so* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
glibcxx=$(objdump -T "$build/decodelab" "$build/decodelab_tests" "$lib"/*.so* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)

size() { du -sh --apparent-size "$@" | awk '{print $1}' | paste -sd' '; }
echo
echo "gpu-bundle: built $build (CUDA architectures 80;90)"
echo "  binaries: $(size "$build/decodelab" "$build/decodelab_tests")   lib/: $(size "$lib")"
echo "  bundled:  $(cd "$lib" && ls | grep -v fallback | paste -sd' ')"
echo "  needs on the target: $glibc, $glibcxx, the NVIDIA driver, cuBLAS 13"
echo "  carry: build-gpu/decodelab build-gpu/decodelab_tests build-gpu/lib"
echo "  run:   bash scripts/gpu-check.sh \$OUT   (docs/gpu.md)"
echo "  kernels: $build/ptxas-summary.txt"
