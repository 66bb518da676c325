#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang++, ASan + UBSan) and fuzzes each one
# for a while, starting from its committed seed corpus (fuzz/corpus/<target>/).
#
#   scripts/fuzz.sh            5 s per target: the CI smoke run
#   scripts/fuzz.sh 600        10 minutes per target: a real session
#   FUZZ_JOBS=2 scripts/fuzz.sh 3600 fuzz_scenario     one target, two processes in parallel
#
# New inputs the fuzzer finds go to build-fuzz/corpus/<target>/ (the committed seeds stay
# small and are never written to); a crash, leak or timeout is saved in
# build-fuzz/findings/<target>/ and fails the script. A summary (executions run clean per
# target) is printed and written to build-fuzz/fuzz-summary.txt. The fuzzer runtime comes
# with clang (Debian: libclang-rt-14-dev; scripts/setup.sh installs it with
# DECODELAB_SETUP_EXTRAS=clang).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-5}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(fuzz_scenario fuzz_safetensors fuzz_chrome_trace fuzz_ncu_csv fuzz_torch_trace)
jobs="${FUZZ_JOBS:-1}"

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

summary=build-fuzz/fuzz-summary.txt
: >"$summary"
failed=0
for target in "${targets[@]}"; do
  name="${target#fuzz_}"
  seeds="fuzz/corpus/$name"
  corpus="build-fuzz/corpus/$name"
  findings="build-fuzz/findings/$name"
  log="build-fuzz/$target.log"
  mkdir -p "$corpus" "$findings"
  # The scenario target resolves model paths relative to fuzz/, so it runs from the repository root.
  parallel=()
  ((jobs > 1)) && parallel=(-fork="$jobs")  # fork mode keeps every child's output in this log
  set +e
  "build-fuzz/fuzz/$target" "$corpus" "$seeds" "${parallel[@]}" \
    -dict="fuzz/dict/$name.dict" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1
  status=$?
  set -e
  # Executions: libFuzzer's final stat line, else (fork mode) the last "#N" progress line.
  runs=$(awk -F': *' '/stat::number_of_executed_units/ {n = $2} END {print n + 0}' "$log")
  if ((runs == 0)); then
    runs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#' || true)
    runs="${runs:-0}"
  fi
  if ((status == 0)); then
    verdict="clean"
  else
    verdict="FAILED (exit $status; see $log and $findings/)"
    failed=1
  fi
  printf '%-20s %6ss  %10s executions  %s\n' "$target" "$seconds" "$runs" "$verdict" | tee -a "$summary"
  ((status == 0)) || tail -n 40 "$log" >&2
done
exit "$failed"
