#!/usr/bin/env bash
# The CPU accuracy table of docs/prediction.md: every lab scenario as shipped, then the same
# bugs at other batch sizes, prompt lengths and models, each run here (fixed twin and buggy,
# repeats alternated) and predicted from this machine's measured roofs and fixed costs. One
# markdown row per case: decode_slowdown and end_to_end_slowdown, measured, predicted and
# the prediction's error. Take it on a QUIET machine (nothing else running): ~5 minutes on
# 2 cores. Extra arguments go to every `decodelab predict` (e.g. --threads 1).
#
# usage: scripts/prediction-accuracy.sh [DECODELAB_ARGS...] > accuracy.md
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
decodelab="${DECODELAB:-$repo/build/decodelab}"
extra=("$@")

row() {  # scenario variant [--set ...]
  local scenario="$1" variant="$2"
  shift 2
  "$decodelab" predict "$scenario" --check --row "$variant" "$@" "${extra[@]}"
}

"$decodelab" predict fp32_ops --check --row "as shipped" --row-header "${extra[@]}"
row host_sync "as shipped"
row no_kv_cache "as shipped"
row non_contiguous "as shipped"
row sequential_generation "as shipped"

# Other batch sizes
row fp32_ops "batch 4" --set workload.requests=4 --set workload.batch_size=4
row host_sync "batch 4" --set workload.requests=4 --set workload.batch_size=4
row non_contiguous "batch 2" --set workload.requests=2 --set workload.batch_size=2
row sequential_generation "4 requests" --set workload.requests=4 --set workload.batch_size=4
# Other prompt lengths
row no_kv_cache "prompt 32" --set workload.prompt_tokens=32
row non_contiguous "prompt 256" --set workload.prompt_tokens=256 --set workload.new_tokens=64
row fp32_ops "prompt 256" --set workload.prompt_tokens=256
# Other models
row fp32_ops "lab-tiny" --set model=lab-tiny
row no_kv_cache "lab-tiny" --set model=lab-tiny
row sequential_generation "lab-tiny" --set model=lab-tiny
row host_sync "lab-small, per token" --set model=lab-small --set bugs.host_sync.per=token --set workload.new_tokens=32
row host_sync "per layer" --set bugs.host_sync.per=layer
