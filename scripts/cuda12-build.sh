#!/usr/bin/env bash
# Compiles decodelab's CUDA host code against a CUDA 12.x toolkit, so that the 12.x branches
# (CUPTI's record structs and APIs chosen by CUPTI_API_VERSION, the runtime and cuBLAS
# calls) are compiled by something, not only restated by the stand-ins of
# tests/test_cupti_records.cpp. The toolkit comes from PyPI's NVIDIA wheels, pinned in
# requirements/cuda12.txt, in a virtual environment of this checkout (.venv-cu12/, ignored
# by git; never the system's Python).
#
# What it does, and what it cannot:
#   - every .cpp of engine/cuda/ and its subfolders (host/, timing/, memory/), and tests/test_cupti_records.cpp
#     (whose `installed` branch then reads the 12.x cupti.h), compiled with the C++ compiler
#     and the 12.x headers first on the include path, warnings as errors;
#   - every CUDA, cuBLAS and CUPTI symbol those objects call looked up in the 12.x shared
#     libraries (libcudart.so.12, libcublas.so.12, libcupti.so.12): an API this toolkit
#     lacks fails here instead of at a link on a GPU machine;
#   - NOT the kernels (.cu): the 12.x wheels carry ptxas but no nvcc, so they stay with this
#     machine's nvcc (the release build).
#
# usage: scripts/cuda12-build.sh [BUILD_DIR]   (default build-cuda12/)
# env:   CUDA12_VENV  the virtual environment (default .venv-cu12/ of this checkout)
#        CXX          the C++ compiler (default c++)
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$repo/build-cuda12}"
venv="${CUDA12_VENV:-$repo/.venv-cu12}"
cxx="${CXX:-c++}"
started=$SECONDS

if [[ ! -x "$venv/bin/pip" ]]; then
  echo "cuda12-build: creating $venv"
  /usr/bin/python3 -m venv "$venv"
fi
# pip does nothing when the pins are already installed.
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$repo/requirements/cuda12.txt"
nvidia="$("$venv/bin/python" -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0] + "/x"))')"

# One toolkit-shaped folder: include/ and lib/ gathering each wheel's.
root="$build/toolkit"
rm -rf "$root"
mkdir -p "$root/include" "$root/lib"
for package in "$nvidia"/*/; do
  [[ -d "$package/include" ]] && for entry in "$package"include/*; do
    [[ "$(basename "$entry")" == __* ]] || ln -sfn "$entry" "$root/include/$(basename "$entry")"
  done
  [[ -d "$package/lib" ]] && for entry in "$package"lib/*.so*; do
    ln -sfn "$entry" "$root/lib/$(basename "$entry")"
  done
done
version="$(grep -m1 -o 'define CUDART_VERSION *[0-9]*' "$root/include/cuda_runtime_api.h" | grep -o '[0-9]*$')"
cupti_version="$(grep -m1 -o 'define CUPTI_API_VERSION *[0-9]*' "$root/include/cupti_version.h" | grep -o '[0-9]*$')"
echo "cuda12-build: CUDA runtime $version, CUPTI_API_VERSION $cupti_version, headers in $root/include"
[[ "$version" == 12* ]] || { echo "cuda12-build: expected a CUDA 12.x runtime, found $version" >&2; exit 1; }

objects="$build/objects"
mkdir -p "$objects"
sources=("$repo"/engine/cuda/*.cpp "$repo"/engine/cuda/*/*.cpp "$repo"/tests/test_cupti_records.cpp)
flags=(-std=c++20 -O1 -fPIC -Wall -Wextra -Werror -DDECODELAB_HAVE_CUDA=1 -DDECODELAB_SOURCE_DIR="\"$repo\""
       -I"$repo" -isystem "$root/include")
failed=0
jobs="${CUDA12_JOBS:-2}"
pids=()
for source in "${sources[@]}"; do
  object="$objects/$(basename "${source%.cpp}").o"
  ( "$cxx" "${flags[@]}" -c "$source" -o "$object" 2>"$object.log" || { cat "$object.log" >&2; exit 1; } ) &
  pids+=($!)
  if (( ${#pids[@]} >= jobs )); then wait "${pids[0]}" || failed=1; pids=("${pids[@]:1}"); fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
(( failed == 0 )) || { echo "cuda12-build: a source did not compile against CUDA $version (above)" >&2; exit 1; }
echo "cuda12-build: ${#sources[@]} sources compiled against CUDA $version"

# Every toolkit symbol our objects call must be defined by the 12.x libraries.
provided="$build/provided.txt"
for library in libcudart.so.12 libcublas.so.12 libcupti.so.12; do
  nm -D --defined-only "$root/lib/$library" | awk '{print $NF}'
done | sed 's/@.*//' | sort -u >"$provided"
needed="$(nm -u "$objects"/*.o | awk '{print $NF}' | grep -E '^(cuda|cublas|cupti|__cuda)' | sort -u)"
missing="$(comm -23 <(echo "$needed") "$provided")"
if [[ -n "$missing" ]]; then
  echo "cuda12-build: called but not defined by the CUDA $version libraries:" >&2
  echo "$missing" >&2
  exit 1
fi
echo "cuda12-build: $(echo "$needed" | wc -l) CUDA/cuBLAS/CUPTI symbols, all defined by the CUDA $version libraries"
echo "cuda12-build: done in $(( SECONDS - started )) s (not compiled: the .cu kernels, no nvcc in the 12.x wheels)"
