#!/usr/bin/env bash
# decodelab and llama.cpp side by side on this machine, on the same weights (issue 17).
#
#   bench/llamacpp-compare.sh LLAMA_CPP_BUILD_DIR [decodelab_vs_llamacpp options...]
#
# LLAMA_CPP_BUILD_DIR is an existing llama.cpp build (CPU, Release) holding llama-simple
# and llama-batched-bench (or bin/ with them). llama.cpp is not a dependency of decodelab:
# without a build directory this script says so in one line and exits 0. It runs
# build/bench/decodelab_vs_llamacpp (built by the release preset), which writes the weights
# as a Hugging Face checkpoint and as GGUF under build/llamacpp-compare/, checks greedy
# tokens, and prints the interleaved comparison; extra options go to it (--rounds,
# --threads, --dtypes, --json FILE).
set -euo pipefail

if [[ $# -lt 1 || -z "${1:-}" ]]; then
  echo "llamacpp-compare: skipped (no llama.cpp build directory given)"
  exit 0
fi
llama_dir=$1
shift
if [[ ! -d "$llama_dir" ]]; then
  echo "llamacpp-compare: $llama_dir is not a directory" >&2
  exit 2
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DECODELAB_BUILD_DIR:-$root/build}
tool=$build/bench/decodelab_vs_llamacpp
if [[ ! -x "$tool" ]]; then
  echo "llamacpp-compare: $tool not found; build it first: cmake --preset release && cmake --build --preset release" >&2
  exit 2
fi
exec "$tool" --llama-cpp "$llama_dir" --work "$build/llamacpp-compare" "$@"
