#!/usr/bin/env bash
# Prediction accuracy on shapes the calibration never timed, into a dated file under
# bench/results/. `decodelab calibrate` times the engine's own op shapes of the shipped
# models (configs/models) at one row count per rows class and a few contexts; every row
# here is a shape it did not time: a model config the project does not ship (written here,
# with grouped-query heads and widths of its own), batch sizes and prompt lengths between
# the timed ones. Each row runs the scenario (fixed twin and buggy, repeats alternated) and
# predicts it from the calibration, then prints each error beside the measurement's own
# interval: an error inside the interval of the measured slowdown is all the measurement can
# tell; the model is held to 25% (issue 50).
#
# The calibration is measured once, at the start, into a cache folder of this run's own
# (CALIBRATION=user reads the user's calibration instead): nothing is re-measured between
# rows, and nothing of the model is tuned after a run — the table is the finding.
# Take it on a QUIET machine (nothing else running): about 15 minutes on 2 cores.
#
# usage: scripts/prediction-accuracy.sh [DECODELAB_ARGS...]   (e.g. --threads 2)
#        OUT=path.md overrides bench/results/<date>-prediction-accuracy-<host>.md
#        ROWS_LIMIT=N runs only the first N rows (a check of the script, not a finding)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
decodelab="${DECODELAB:-$repo/build/decodelab}"
extra=("$@")
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
host="$(hostname | tr -c 'A-Za-z0-9._\n-' '-')"
out="${OUT:-$repo/bench/results/$(date -u +%F)-prediction-accuracy-$host.md}"

threads=()
for ((i = 0; i < ${#extra[@]}; ++i)); do
  if [[ "${extra[i]}" == --threads ]]; then threads=(--threads "${extra[i + 1]:-0}"); fi
  if [[ "${extra[i]}" == --threads=* ]]; then threads=("${extra[i]}"); fi
done

calibration_seconds="(the user's calibration)"
calibration_roofs=""
if [[ "${CALIBRATION:-fresh}" == fresh ]]; then
  export DECODELAB_CACHE_DIR="$scratch/cache"
  mkdir -p "$DECODELAB_CACHE_DIR"
  start=$(date +%s)
  "$decodelab" calibrate "${threads[@]}" > "$scratch/calibration.txt"
  calibration_seconds="$(( $(date +%s) - start )) s"
  # The figures the rows are priced with (roofs and the cache's hit curve), as calibrate printed them.
  calibration_roofs="$(grep -E '^  (memory bandwidth|fp32 |cache \(measured\))' "$scratch/calibration.txt" || true)"
fi

# A model the project does not ship: other widths, 12 query heads sharing 4 KV heads.
cat > "$scratch/lab-unshipped.yaml" <<'MODEL'
description: accuracy check model, not shipped (other widths, GQA 12/4)
vocab_size: 8000
hidden_size: 768
intermediate_size: 2048
num_hidden_layers: 6
num_attention_heads: 12
num_key_value_heads: 4
max_position_embeddings: 2048
rms_norm_eps: 1.0e-5
rope_theta: 10000.0
tie_word_embeddings: false
MODEL
unshipped="$scratch/lab-unshipped.yaml"

rows=0
limit="${ROWS_LIMIT:-0}"  # > 0: only the first this many rows (to check the script itself)
row() {  # scenario variant [--set ...]
  local scenario="$1" variant="$2"
  shift 2
  if ((limit > 0 && rows >= limit)); then return 0; fi
  rows=$((rows + 1))
  echo "row $rows: $scenario, $variant" >&2
  "$decodelab" predict "$scenario" --check "$@" "${extra[@]}" --json "$scratch/check-$rows.json" -q > /dev/null
  printf '%s\t%s\t%s\n' "$scenario" "$variant" "$scratch/check-$rows.json" >> "$scratch/rows.tsv"
}

started="$(date -u '+%Y-%m-%d %H:%M UTC')"
# Another model config
row fp32_ops "unshipped model" --set "model=$unshipped"
row no_kv_cache "unshipped model" --set "model=$unshipped"
row non_contiguous "unshipped model" --set "model=$unshipped"
row sequential_generation "unshipped model, 3 requests" --set "model=$unshipped" --set workload.requests=3 \
  --set workload.batch_size=3
row host_sync "unshipped model" --set "model=$unshipped"
# Batch sizes the calibration did not time (it times 1, 4, 24 and 128 rows)
row fp32_ops "batch 3" --set workload.requests=3 --set workload.batch_size=3
row host_sync "batch 6" --set workload.requests=6 --set workload.batch_size=6
row sequential_generation "6 requests" --set workload.requests=6 --set workload.batch_size=6
# Prompt lengths between the timed contexts
row no_kv_cache "prompt 48" --set workload.prompt_tokens=48
row non_contiguous "prompt 96" --set workload.prompt_tokens=96
row fp32_ops "prompt 192" --set workload.prompt_tokens=192
finished="$(date -u '+%H:%M UTC')"

python3 - "$scratch/rows.tsv" "$out" "$started" "$finished" "$calibration_seconds" "$(uname -n)" \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" "${extra[*]}" "$calibration_roofs" <<'PY'
import json, sys
rows_file, out, started, finished, calibration_seconds, host, cpu, args, roofs = sys.argv[1:10]
lines = [f"# Prediction accuracy on shapes the calibration never timed ({started} to {finished})", "",
         f"Machine: {host}, {cpu}; arguments: `{args or '(none)'}`; calibration measured once at the start "
         f"({calibration_seconds}), nothing re-measured. Written by `scripts/prediction-accuracy.sh`.", ""]
if roofs:
    lines += ["The calibration's figures:", "", *[f"    {line.strip()}" for line in roofs.splitlines()], ""]
lines += [
         "Error = measured / predicted - 1. The interval is the measured slowdown's own 95% interval "
         "(of the pairs' ratios), as a share of the median: a prediction inside it is as close as the "
         "measurement can tell. The model is held to 25%. A row on a busy machine holds its noise too.", "",
         "| scenario | variant | figure | measured | 95% interval | predicted | error | predicted inside the interval | within 25% | machine |",
         "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- | --- |"]
held = total = 0
for line in open(rows_file):
    scenario, variant, path = line.rstrip("\n").split("\t")
    entry = json.load(open(path))  # `predict --check --json`: the prediction, its check under "check"
    check = entry["check"]
    machine = "busy" if check.get("machine_contended") else ("roofs noisy" if check.get("roofs_noisy") else "quiet")
    for key in ("decode_slowdown", "end_to_end_slowdown"):
        figure = check.get(key)
        if not figure:
            continue
        measured, predicted, error = figure["measured"], figure["predicted"], figure["error"]
        low, high = figure.get("measured_low"), figure.get("measured_high")
        interval = f"{low:.2f}-{high:.2f}x (±{100 * figure.get('measured_relative_ci', 0):.0f}%)" if low else "-"
        inside = ("yes" if low <= predicted <= high else "no") if low else "-"
        within = abs(error) <= 0.25
        total += 1
        held += within
        lines.append(f"| {scenario} | {variant} | {key} | {measured:.2f}x | {interval} | {predicted:.2f}x | "
                     f"{100 * error:+.0f}% | {inside} | {'yes' if within else 'NO'} | {machine} |")
lines += ["", f"{held} of {total} slowdowns within 25% of measured."]
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
print(f"\nwritten to {out}", file=sys.stderr)
PY
