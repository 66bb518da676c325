#!/usr/bin/env bash
# Assembles gpu-bundle/: everything a bare GPU machine needs, beyond this checkout, to run
# scripts/gpu-check.sh — one folder to carry (the device tool's `carry`, 64 MiB with the
# tracked tree). Two ways in, so that a machine with nvcc builds for itself (faster on
# its cores, and matched to its toolkit) and one without still runs:
#   deps/     the headers, CMake packages and shared library of our Debian dependencies
#             (yaml-cpp, CLI11, nlohmann-json, Catch2, zlib): what `cmake` needs there to build
#   bin/      decodelab and decodelab_tests built here (gpu-portable preset: sm_80 + sm_90,
#             AVX2 baseline CPU code), stripped, and lib/ with the shared libraries they
#             load that a CUDA image may lack (yaml-cpp, OpenMP, the CUDA runtime and
#             CUPTI we compiled against); libstdc++/libgcc in lib/fallback, used only if
#             the target's are older
#   bundle.env  the CUDA runtime version and sonames the binaries need (gpu-check reads
#             it to decide whether the driver there accepts them), and the C library versions
# Left out: glibc, the NVIDIA driver (libcuda must match the kernel module there), cuBLAS
# (~600 MB: the GPU machine has it). Also writes build-gpu/ptxas-summary.txt (registers
# and spills per kernel) and prints the sizes and what to carry. See docs/gpu.md.
#
# usage: scripts/gpu-bundle.sh [--jobs N]
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=2
if [[ "${1:-}" == "--jobs" ]]; then jobs="${2:?--jobs needs a number}"; fi

build=build-gpu
bundle=gpu-bundle
carry_limit_mib=64
cmake --preset gpu-portable -DDECODELAB_PTXAS_VERBOSE=ON >/dev/null
# -Xptxas -v prints at compile time only: touch the CUDA sources so the summary is complete.
touch engine/cuda/*/*.cu
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

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib/fallback" "$bundle/deps"

# --- binaries and the shared libraries they load ------------------------------------------
for binary in decodelab decodelab_tests; do
  cp "$build/$binary" "$bundle/bin/$binary"
  strip --strip-unneeded "$bundle/bin/$binary"
done
skip_re='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libutil|libresolv|libcuda\.so|libnvidia-|libcublas)'
fallback_re='^(libstdc\+\+|libgcc_s)'
for binary in "$build/decodelab" "$build/decodelab_tests"; do
  ldd "$binary" | while read -r name arrow path _; do
    [[ "$arrow" == "=>" && -f "$path" ]] || continue
    if [[ "$name" =~ $skip_re ]]; then continue; fi
    if [[ "$name" =~ $fallback_re ]]; then cp -Lf "$path" "$bundle/lib/fallback/$name"; continue; fi
    cp -Lf "$path" "$bundle/lib/$name"
  done
done
if ldd "$build/decodelab" | grep -q "not found"; then
  echo "gpu-bundle: unresolved libraries here:" >&2
  ldd "$build/decodelab" | grep "not found" >&2
  exit 1
fi

# --- our Debian dependencies, for building on the GPU machine -----------------------------
# The files of the -dev packages (headers, CMake packages) and yaml-cpp's library, under
# deps/usr as installed; documentation left out. CMake's package files locate themselves
# relative to their own folder, so `-DCMAKE_PREFIX_PATH=gpu-bundle/deps/usr` finds them.
for package in libyaml-cpp-dev libcli11-dev nlohmann-json3-dev catch2 zlib1g-dev; do
  dpkg -L "$package" >/dev/null 2>&1 || { echo "gpu-bundle: package $package is not installed (scripts/setup.sh)" >&2; exit 1; }
done
yaml_runtime="$(dpkg -S "$(readlink -f "$(dpkg -L libyaml-cpp-dev | grep -m1 'libyaml-cpp\.so$')")" | cut -d: -f1)"
for package in libyaml-cpp-dev "$yaml_runtime" libcli11-dev nlohmann-json3-dev catch2 zlib1g-dev; do
  dpkg -L "$package" | while read -r path; do
    [[ -f "$path" || -L "$path" ]] || continue
    [[ "$path" == /usr/share/doc/* || "$path" == /usr/share/lintian/* ]] && continue
    mkdir -p "$bundle/deps$(dirname "$path")"
    cp -P "$path" "$bundle/deps$path"
  done
done
# A link whose target is not carried (zlib's libz.so points, absolutely, to a versioned
# library in /lib whose version differs between systems) becomes a copy of that target.
find "$bundle/deps" -type l | while read -r link; do
  if [[ "$(readlink "$link")" == /* || ! -e "$link" ]]; then
    rm "$link"
    cp -L "${link#"$bundle/deps"}" "$link"
  fi
done

# --- what the binaries need of the target ------------------------------------------------------
needed() { objdump -p "$build/decodelab" "$build/decodelab_tests" | awk '/NEEDED/ {print $2}' | grep -m1 "$1" || true; }
nvcc_bin="$(grep -m1 '^CMAKE_CUDA_COMPILER:' "$build/CMakeCache.txt" | cut -d= -f2)"
cuda_runtime="$("$nvcc_bin" --version | grep -o 'release [0-9.]*' | cut -d' ' -f2)"
glibc=$(objdump -T "$build/decodelab" "$build/decodelab_tests" "$bundle"/lib/*.so* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
glibcxx=$(objdump -T "$build/decodelab" "$build/decodelab_tests" "$bundle"/lib/*.so* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)
cat >"$bundle/bundle.env" <<ENV
# Written by scripts/gpu-bundle.sh; read by scripts/gpu-check.sh.
CUDA_RUNTIME_VERSION=$cuda_runtime
CUDART_SONAME=$(needed libcudart)
CUBLAS_SONAME=$(needed 'libcublas\.')
CUBLASLT_SONAME=$(needed libcublasLt)
CUPTI_SONAME=$(needed libcupti)
NEEDS_GLIBC=$glibc
NEEDS_GLIBCXX=$glibcxx
CUDA_ARCHITECTURES="80;90"
BUILT_ON="$(date -u '+%Y-%m-%d') $(uname -n) commit $(git rev-parse --short HEAD)"
ENV
cp "$build/ptxas-summary.txt" "$bundle/"

# --- sizes: the bundle and the tracked tree travel together, 64 MiB at most -------------------
mib() { echo $(( ($1 + 1048575) / 1048576 )); }
bundle_bytes=$(du -sb --apparent-size "$bundle" | cut -f1)
tree_bytes=$(git ls-files -z | xargs -0 du -cb --apparent-size 2>/dev/null | tail -1 | cut -f1)
echo
echo "gpu-bundle: $bundle/ ($(mib "$bundle_bytes") MiB) for CUDA $cuda_runtime, architectures 80;90"
du -sh --apparent-size "$bundle"/bin/* "$bundle/lib" "$bundle/deps" | sed 's/^/  /'
echo "  bundled libraries: $(cd "$bundle/lib" && ls | grep -v fallback | paste -sd' ')"
echo "  needs on the target: $glibc, $glibcxx, a driver for CUDA ${cuda_runtime%%.*}.x," \
  "$(grep '^CUBLAS_SONAME=' "$bundle/bundle.env" | cut -d= -f2)"
echo "  kernels: $bundle/ptxas-summary.txt"
total=$(( bundle_bytes + tree_bytes ))
echo "  carried with the tracked tree ($(mib "$tree_bytes") MiB): $(mib "$total") of $carry_limit_mib MiB"
if (( total > carry_limit_mib * 1048576 )); then
  echo "gpu-bundle: too large to carry" >&2
  exit 1
fi
echo "  run: run(command=\"bash scripts/gpu-check.sh \$OUT\", timeout_s=600, carry=[\"$bundle\"])"
