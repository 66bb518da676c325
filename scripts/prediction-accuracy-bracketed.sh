#!/usr/bin/env bash
# The accuracy run as it was before issue 50, kept for the dated files it wrote under
# bench/results/: it re-measures the roofs around every row. The model is judged by
# scripts/prediction-accuracy.sh (one calibration, shapes it never timed) instead.
# The CPU accuracy table as it was: every lab scenario as shipped, then the same
# bugs at other batch sizes, prompt lengths and models, each run here (fixed twin and buggy,
# repeats alternated) and predicted from this machine's measured roofs and fixed costs. One
# markdown row per case: decode_slowdown and end_to_end_slowdown, measured (± the interval
# of the pairs' ratios), predicted and the prediction's error (measured / predicted - 1),
# how far apart the kernel threads' cores were during the run (the machine check's core
# round trip: a VM's vCPUs move between near and far cores, and small parallel ops with
# them), and whether the machine was quiet ("busy": the machine check before the row found
# contention; "roofs noisy": the roofs it was priced with were measured on a noisy machine). Then the decode-batch and context-length
# sweeps, one row per point: decode tok/s measured (± its 95% interval), predicted, the error. Every
# row and sweep also gets its prediction priced again with the roofs measured just after its runs,
# and a verdict that weighs both sides' uncertainty (scripts/accuracy-bracket.py: holds, holds
# within the noise, misses). Take it on a QUIET machine (nothing else
# running): ~16 minutes on 2 cores. Before each row and each sweep this machine is calibrated
# again into a cache folder of its own (`decodelab calibrate`, tens of seconds), so
# that each prediction is priced with figures from the same minutes as the runs it is checked
# against: a VM's memory bandwidth moves by 2x from period to period, and a slowdown whose two
# sides have different limiters moves with it (docs/prediction.md). ROOFS=once calibrates
# once, into the user's calibration, for the whole table; ROOFS=cached (or SKIP_ROOFS=1)
# calibrates nothing and prices every row from the calibration as it is. (A row at another
# thread count than the calibration's, host_sync at one, is calibrated first by its command.)
# Extra arguments go to every `decodelab predict` (e.g. --threads 1).
#
# usage: scripts/prediction-accuracy.sh [DECODELAB_ARGS...] > accuracy.md
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
decodelab="${DECODELAB:-$repo/build/decodelab}"
extra=("$@")

threads=()
for ((i = 0; i < ${#extra[@]}; ++i)); do
  if [[ "${extra[i]}" == --threads ]]; then threads=(--threads "${extra[i + 1]:-0}"); fi
  if [[ "${extra[i]}" == --threads=* ]]; then threads=("${extra[i]}"); fi
done
roofs="${ROOFS:-per-row}"
if [[ "${SKIP_ROOFS:-0}" == 1 ]]; then roofs=cached; fi
case "$roofs" in per-row|once|cached) ;; *) echo "ROOFS must be per-row, once or cached, not '$roofs'" >&2; exit 2 ;; esac
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
if [[ "$roofs" == once ]]; then
  "$decodelab" calibrate "${threads[@]}" >&2
fi
# Per row: this machine calibrated just before it, into a fresh folder that its prediction reads.
fresh_roofs() {
  [[ "$roofs" == per-row ]] || return 0
  export DECODELAB_CACHE_DIR="$scratch/roofs-$((++roof_measurements))"
  mkdir -p "$DECODELAB_CACHE_DIR"
  "$decodelab" calibrate "${threads[@]}" >&2
}
roof_measurements=0

# Each row and sweep waits for the roofs measured after its runs (the next one's, or one more
# measurement at the end): accuracy-bracket.py prices the same prediction with them and weighs
# both sides' uncertainty in a verdict (holds / holds within the noise / misses).
rows=0
sweep_rows=""
pending=()  # what waits: row or sweep, its name (a row's number), then its `predict` arguments
finish_pending() {
  ((${#pending[@]})) || return 0
  local kind="${pending[0]}" name="${pending[1]}" after=()
  if [[ "$roofs" == per-row ]]; then
    "$decodelab" predict "${pending[@]:2}" "${extra[@]}" --json "$scratch/after-$name.json" -q
    after=("$scratch/after-$name.json")
  fi
  if [[ "$kind" == row ]]; then
    python3 "$repo/scripts/accuracy-bracket.py" row "$scratch/row-$name.md" "$scratch/check-$name.json" "${after[@]}" |
      tee -a "$scratch/table.md"
  else
    sweep_rows+="$(python3 "$repo/scripts/accuracy-bracket.py" sweep "$name" "$scratch/$name.json" "${after[@]}")"$'\n'
  fi
  pending=()
}
row() {  # scenario variant [--set ...]
  local scenario="$1" variant="$2" header=()
  shift 2
  fresh_roofs
  finish_pending
  ((++rows == 1)) && header=(--row-header)
  "$decodelab" predict "$scenario" --check --row "$variant" "${header[@]}" "$@" "${extra[@]}" \
    --json "$scratch/check-$rows.json" > "$scratch/row-$rows.md"
  pending=(row "$rows" "$scenario" "$@")
}

row fp32_ops "as shipped"
row host_sync "as shipped"
row no_kv_cache "as shipped"
row non_contiguous "as shipped"
row sequential_generation "as shipped"

# Other batch sizes
row fp32_ops "batch 4" --set workload.requests=4 --set workload.batch_size=4
row host_sync "batch 4" --set workload.requests=4 --set workload.batch_size=4
row non_contiguous "batch 2" --set workload.requests=2 --set workload.batch_size=2
row sequential_generation "8 requests" --set workload.requests=8 --set workload.batch_size=8
# Other prompt lengths
row no_kv_cache "prompt 32" --set workload.prompt_tokens=32
row non_contiguous "prompt 256" --set workload.prompt_tokens=256 --set workload.new_tokens=64
row fp32_ops "prompt 256" --set workload.prompt_tokens=256
# Other models
row fp32_ops "lab-tiny" --set model=lab-tiny
row no_kv_cache "lab-tiny" --set model=lab-tiny
row sequential_generation "lab-tiny" --set model=lab-tiny
# A real Llama shape (Llama-3.2-1B, 2.3 GB in fp16), on short workloads: ~3 minutes together
row fp32_ops "llama-1b, 16 new" --set model=llama-1b --set workload.new_tokens=16
row sequential_generation "llama-1b, 4 requests, 12 new" --set model=llama-1b --set workload.requests=4 \
  --set workload.batch_size=4 --set workload.new_tokens=12
row host_sync "lab-small, per token" --set model=lab-small --set bugs.host_sync.per=token --set workload.new_tokens=32
row host_sync "per layer" --set bugs.host_sync.per=layer
# The sweeps' points: decode tok/s measured against predicted (sweep --json's fields), each
# sweep bracketed by the roofs measured after it as the rows are.
for sweep in decode-batch context-length; do
  fresh_roofs
  finish_pending
  "$decodelab" sweep "$sweep" --json "$scratch/$sweep.json" "${extra[@]}" >/dev/null
  pending=(sweep "$sweep" "sweeps/$sweep")
done
fresh_roofs
finish_pending
echo
{
  echo "| sweep | point | decode tok/s measured | predicted | error | predicted bound | predicted with the roofs after | bracketed | verdict |"
  echo "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |"
  printf '%s' "$sweep_rows"
} | tee -a "$scratch/table.md"
echo
python3 "$repo/scripts/accuracy-bracket.py" summary "$scratch/table.md"
