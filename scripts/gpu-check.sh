#!/usr/bin/env bash
# The GPU check: everything decodelab should show on a CUDA machine, in one run of at
# most ~8 minutes, on a bare machine that has the NVIDIA driver, nvcc and cuBLAS but none
# of our other dependencies. It runs the binaries that scripts/gpu-bundle.sh built here
# (carried as build-gpu/decodelab, build-gpu/decodelab_tests, build-gpu/lib).
#
# Stages, each under its own `timeout` and inside an overall budget (GPU_CHECK_BUDGET_S,
# default 470 s); a failed or timed-out stage is recorded and the next one runs:
#   nvidia-smi · environment (libraries, versions) · cuda-tests (the [cuda] Catch2 tests)
#   · roofline (measured roofs) · lab on llama-1b · decode-batch sweep on llama-1b
#   · compute-sanitizer memcheck on a lab-tiny run · memcheck on the [cuda] tests (if time is left)
# RESULTS_DIR receives summary.json, summary.html, gpu-check.log, results.tar.gz (every
# stage's log and output) and, when the lab wrote them, lab.json and lab-report.html.
# The last thing printed is a short table. See docs/gpu.md.
#
# usage: scripts/gpu-check.sh RESULTS_DIR
set -uo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 RESULTS_DIR" >&2
  exit 2
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$1"
results="$(cd "$1" && pwd)"
work="$results/work"
rm -rf "$work"
mkdir -p "$work"
log="$results/gpu-check.log"
: >"$log"
budget="${GPU_CHECK_BUDGET_S:-470}"
reserve=15  # seconds kept for packing and the summary
started=$SECONDS
bin="$repo/build-gpu"
decodelab="$bin/decodelab"
tests="$bin/decodelab_tests"

say() { echo "[gpu-check $(( SECONDS - started ))s] $*" | tee -a "$log"; }

# --- environment ----------------------------------------------------------------------------
export DECODELAB_HOME="$repo"
library_path="$bin/lib"
for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/extras/CUPTI/lib64; do
  [[ -d "$dir" ]] && library_path="$library_path:$dir"
done
export LD_LIBRARY_PATH="$library_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [[ -x "$decodelab" ]] && ldd "$decodelab" 2>/dev/null | grep -q "libcublas.*not found"; then
  # cuBLAS outside the usual places (e.g. a Python wheel): find it once.
  found="$(timeout 30 find / -xdev -name 'libcublas.so.13' -not -path '/proc/*' 2>/dev/null | head -1)"
  [[ -n "$found" ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
fi
if [[ -x "$tests" ]] && ! "$tests" --list-tests >/dev/null 2>"$work/smoke.err"; then
  if grep -qE "GLIBCXX|libstdc\+\+|libgcc_s" "$work/smoke.err"; then
    export LD_LIBRARY_PATH="$bin/lib/fallback:$LD_LIBRARY_PATH"  # this machine's C++ runtime is older
  fi
fi

# --- stage runner ---------------------------------------------------------------------------
names=()
statuses=()
seconds=()
notes=()

# run_stage NAME LIMIT_S COMMAND...: runs COMMAND with its output in work/NAME.log.
run_stage() {
  local name="$1" limit="$2"
  shift 2
  local left=$(( budget - (SECONDS - started) - reserve ))
  (( limit > left )) && limit=$left
  local status rc=0 begin=$SECONDS
  if (( limit < 10 )); then
    status="skipped"
    echo "skipped: out of time budget" >"$work/$name.log"
  else
    say "stage $name (limit ${limit}s): $*"
    timeout --kill-after=10 "$limit" "$@" >"$work/$name.log" 2>&1
    rc=$?
    case $rc in
      0) status="ok" ;;
      124 | 137) status="timeout" ;;
      *) status="failed($rc)" ;;
    esac
  fi
  names+=("$name")
  statuses+=("$status")
  seconds+=("$(( SECONDS - begin ))")
  notes+=("$(stage_note "$name")")
  say "stage $name: $status in $(( SECONDS - begin ))s ${notes[-1]}"
  tail -n 25 "$work/$name.log" | sed 's/^/    /' >>"$log"
}

# One line of what a stage's log says.
stage_note() {
  local file="$work/$1.log"
  case "$1" in
    nvidia-smi) tail -n 1 "$file" ;;  # the CSV line: name, driver, memory, clocks
    cuda-tests | memcheck-cuda-tests)
      { grep -E "^(All tests passed|test cases:)" "$file" | tail -1; grep -m1 -oE "device times: [^)]*" "$file"; } |
        paste -sd' ' ;;
    memcheck-*) grep -m1 -E "ERROR SUMMARY" "$file" ;;
    *) { grep -iE "error|failed" "$file" || grep -v '^[[:space:]]*$' "$file"; } | tail -1 | cut -c1-120 ;;
  esac
}

# Whether `decodelab SUBCOMMAND --help` mentions FLAG (the lab, sweep and roofline commands
# are younger than this script: use the flags they have).
help_of() { timeout 20 "$decodelab" "$1" --help 2>&1 || true; }
has_flag() { grep -q -- "$2" <<<"$1"; }

# A scenario under scenarios/ whose path matches a pattern, or nothing.
find_scenario() { find "$repo/scenarios" -name '*.yaml' 2>/dev/null | grep -E "$1" | sort | head -1; }

# --- stages ---------------------------------------------------------------------------------
run_stage nvidia-smi 30 bash -c 'nvidia-smi && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv'

run_stage environment 60 bash -c "
  echo LD_LIBRARY_PATH=\$LD_LIBRARY_PATH; uname -a; (nvcc --version || true) | tail -2
  ls -la '$bin' '$bin/lib'; ldd '$decodelab' '$tests'
  if ldd '$decodelab' '$tests' | grep 'not found'; then echo 'missing libraries'; exit 1; fi
  '$decodelab' --version && '$decodelab' list"

run_stage cuda-tests 120 "$tests" "[cuda]" --durations yes

roofline_help="$(help_of roofline)"
roofline_args=(roofline --measure --backend cuda)
has_flag "$roofline_help" "--json" && roofline_args+=(--json "$work/roofline.json")
run_stage roofline 90 "$decodelab" "${roofline_args[@]}"

lab_help="$(help_of lab)"
lab_args=(lab --backend cuda)
if has_flag "$lab_help" "--model"; then lab_args+=(--model llama-1b); else lab_args+=(--set model=llama-1b); fi
has_flag "$lab_help" "--json" && lab_args+=(--json "$work/lab.json")
has_flag "$lab_help" "--report" && lab_args+=(--report "$work/lab-report")
run_stage lab-llama-1b 170 "$decodelab" "${lab_args[@]}"

sweep_scenario="$(find_scenario 'decode.*batch|batch.*sweep|sweep.*batch')"
sweep_help="$(help_of sweep)"
if [[ -z "$sweep_scenario" ]]; then
  # No decode-batch sweep scenario in this tree: write one in the documented format.
  sweep_scenario="$work/decode-batch-sweep.yaml"
  cat >"$sweep_scenario" <<'YAML'
description: llama-1b bf16 decode throughput against batch size (written by gpu-check.sh)
model: llama-1b
dtype: bf16
backend: cuda
workload:
  requests: 32
  batch_size: [1, 4, 16, 32]
  prompt_tokens: 128
  new_tokens: 32
  seed: 0
run: {warmup: 1, repeats: 2}
YAML
fi
sweep_args=(sweep "$sweep_scenario" --backend cuda --set model=llama-1b)
has_flag "$sweep_help" "--json" && sweep_args+=(--json "$work/sweep.json")
run_stage sweep-decode-batch 100 "$decodelab" "${sweep_args[@]}"

tiny_scenario="$(find_scenario 'quickstart')"
[[ -z "$tiny_scenario" ]] && tiny_scenario="$(find_scenario '.')"

# Launch overhead: a tiny model at batch 1 is overhead-bound; a CUDA graph per decode step
# should shrink the gaps (the run's summary line prints the device's idle share).
graph_args=(run "$tiny_scenario" --backend cuda --set model=lab-tiny --set workload.requests=1
            --set workload.batch_size=1 --set workload.new_tokens=128)
run_stage graphs-off 60 "$decodelab" "${graph_args[@]}" --report "$work/graphs-off"
run_stage graphs-on 60 "$decodelab" "${graph_args[@]}" --cuda-graphs --report "$work/graphs-on"
if command -v compute-sanitizer >/dev/null; then
  # Events, not CUPTI, under the sanitizer (both want the same profiling hooks).
  run_stage memcheck-lab-tiny 90 env DECODELAB_CUDA_TIMER=events compute-sanitizer --tool memcheck \
    --error-exitcode 3 "$decodelab" run "$tiny_scenario" --backend cuda --set model=lab-tiny \
    --set workload.new_tokens=8
  run_stage memcheck-cuda-tests 150 env DECODELAB_CUDA_TIMER=events compute-sanitizer --tool memcheck \
    --error-exitcode 3 "$tests" "[cuda]"
else
  run_stage memcheck-lab-tiny 10 bash -c 'echo "compute-sanitizer is not on PATH"; exit 1'
fi

# --- results ----------------------------------------------------------------------------------
for file in "$work"/*.log; do  # keep every log under a few MB (head and tail)
  if (( $(stat -c %s "$file") > 4000000 )); then
    { head -c 1500000 "$file"; echo; echo "[... cut by gpu-check ...]"; tail -c 1500000 "$file"; } >"$file.cut"
    mv "$file.cut" "$file"
  fi
done
[[ -f "$work/lab.json" ]] && cp "$work/lab.json" "$results/lab.json"
lab_html="$(find "$work/lab-report" -name '*.html' 2>/dev/null | head -1)"
[[ -n "$lab_html" ]] && cp "$lab_html" "$results/lab-report.html"

json_escape() { sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/ /g' | tr -d '\000-\037'; }
device="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 | json_escape)"
{
  echo "{"
  echo "  \"device\": \"$device\","
  echo "  \"commit\": \"$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)\","
  echo "  \"total_seconds\": $(( SECONDS - started )),"
  echo "  \"stages\": ["
  for i in "${!names[@]}"; do
    comma=$([[ $i -lt $(( ${#names[@]} - 1 )) ]] && echo "," || echo "")
    echo "    {\"name\": \"${names[$i]}\", \"status\": \"${statuses[$i]}\", \"seconds\": ${seconds[$i]}," \
      "\"note\": \"$(printf '%s' "${notes[$i]}" | json_escape)\", \"log\": \"work/${names[$i]}.log\"}$comma"
  done
  echo "  ]"
  echo "}"
} >"$results/summary.json"

html_escape() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g'; }
{
  echo "<!doctype html><html><head><meta charset='utf-8'><title>decodelab GPU check</title>"
  echo "<style>body{font-family:sans-serif;margin:2em}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}"
  echo ".ok{color:#2b6a24}.bad{color:#b3154f}pre{background:#f3f1ea;padding:8px;overflow-x:auto;font-size:12px}</style></head><body>"
  echo "<h1>decodelab GPU check</h1><p>$(printf '%s' "$device" | html_escape) — $(date -u '+%Y-%m-%d %H:%M UTC')," \
    "$(( SECONDS - started )) s</p>"
  [[ -n "$lab_html" ]] && echo "<p><a href='lab-report.html'>lab report</a></p>"
  echo "<table><tr><th>stage</th><th>status</th><th>s</th><th>note</th></tr>"
  for i in "${!names[@]}"; do
    class=$([[ "${statuses[$i]}" == ok ]] && echo ok || echo bad)
    echo "<tr><td>${names[$i]}</td><td class='$class'>${statuses[$i]}</td><td>${seconds[$i]}</td>" \
      "<td>$(printf '%s' "${notes[$i]}" | html_escape)</td></tr>"
  done
  echo "</table>"
  for i in "${!names[@]}"; do
    echo "<h2>${names[$i]}</h2><pre>$(tail -n 40 "$work/${names[$i]}.log" | html_escape)</pre>"
  done
  echo "</body></html>"
} >"$results/summary.html"

tar -czf "$results/results.tar.gz" -C "$results" work summary.json
# Few files come back from a device run: keep the unpacked copy only when asked.
[[ "${GPU_CHECK_KEEP_WORK:-0}" == 1 ]] || rm -rf "$work"

{
  echo
  printf '%-22s %-12s %5s  %s\n' stage status s note
  for i in "${!names[@]}"; do
    printf '%-22s %-12s %5s  %s\n' "${names[$i]}" "${statuses[$i]}" "${seconds[$i]}" "${notes[$i]:0:90}"
  done
  echo "results: $results (summary.json, summary.html, gpu-check.log, results.tar.gz)"
} | tee -a "$log"
