#!/usr/bin/env bash
# The GPU prediction table of docs/prediction.md: the five lab scenarios predicted on every
# GPU device file, at the lab's shapes and with the model swapped for llama-1b and llama-8b.
# Computed, not measured (no GPU is needed): each scenario's op stream is recorded without
# running kernels and priced against the device file's roofs and fixed costs. One row per
# bug and shape; each cell: decode_slowdown / end_to_end_slowdown, and what bounds the
# buggy decode phase. --rows prints decodelab's own rows (one per device) instead.
#
# usage: scripts/prediction-gpu-table.sh [--rows] > gpu-predictions.md
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
decodelab="${DECODELAB:-$repo/build/decodelab}"
devices=(h100-sxm h200 a100-80gb l4)
raw=false
[[ "${1:-}" == --rows ]] && raw=true

rows() {  # all predictions as decodelab's markdown rows
  local header=--row-header
  for model in lab llama-1b llama-8b; do
    for scenario in fp32_ops host_sync no_kv_cache non_contiguous sequential_generation; do
      for device in "${devices[@]}"; do
        if [[ $model == lab ]]; then
          "$decodelab" predict "$scenario" --device "$device" --row "lab shape" $header
        else
          "$decodelab" predict "$scenario" --device "$device" --row "$model" --set "model=$model" $header
        fi
        header=
      done
    done
  done
}

if $raw; then
  rows
  exit 0
fi
echo "| bug | shape | ${devices[*]} |" | sed 's/ \([a-z0-9-]*\) \([a-z0-9-]*\) \([a-z0-9-]*\) \([a-z0-9-]*\) |$/ \1 | \2 | \3 | \4 |/'
echo "| --- | --- | --- | --- | --- | --- |"
# decodelab's row: | scenario | variant | device | decode | end to end | fixed bound | buggy bound |
rows | awk -F' \\| ' -v n="${#devices[@]}" '
  /^\| scenario/ || /^\| ---/ { next }
  {
    key = $1 " | " $2; sub(/^\| /, "", key)
    bound = $7; sub(/ \|$/, "", bound)
    cell = $4 " / " $5 " (" bound ")"
    cells[key] = cells[key] " | " cell
    if (++count[key] == n) print "| " key cells[key] " |"
  }'
