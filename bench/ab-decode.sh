#!/usr/bin/env bash
# Two decodelab builds side by side on one scenario (before/after a change to the engine):
# `decodelab run` of each build in alternating order for N rounds, each run's medians of
# decode_bandwidth_gbps and decode tok/s, and the ratio after ÷ before within each round
# (the machine's bandwidth moves between rounds; a pair run back to back sees the same
# machine, and the order alternates so that neither build always runs second). The first
# round also checks that both builds give the same tokens and the same logits, byte for
# byte (--dump-logits).
#
#   bench/ab-decode.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR [rounds] [scenario] [threads]
#
# Defaults: 5 rounds, scenarios/examples/lab-small-decode.yaml (lab-small fp16, batch 1,
# prompt 128, 128 new tokens), every core. Each build dir holds a built `decodelab`.
# Output files go to $AB_OUT (default: a new temporary directory).
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: bench/ab-decode.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR [rounds] [scenario] [threads]" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
before=$1/decodelab
after=$2/decodelab
rounds=${3:-5}
scenario=${4:-$root/scenarios/examples/lab-small-decode.yaml}
threads=${5:-}
for binary in "$before" "$after"; do
  [[ -x "$binary" ]] || { echo "ab-decode: $binary not found or not executable" >&2; exit 2; }
done
out=${AB_OUT:-$(mktemp -d)}
mkdir -p "$out"
thread_option=()
[[ -n "$threads" ]] && thread_option=(--threads "$threads")

run() {  # run NAME ROUND [extra options]
  local name=$1 round=$2
  shift 2
  local binary=$before
  [[ $name == after ]] && binary=$after
  DECODELAB_HOME=$root "$binary" run "$scenario" --quiet "${thread_option[@]}" --json "$out/$name-$round.json" "$@"
}

echo "ab-decode: $scenario, $rounds rounds, results in $out"
echo "load average before: $(cat /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
  extra=()
  [[ $round == 1 ]] && extra=(--dump-logits "$out/logits-NAME.npy")
  order=(before after)
  (( round % 2 == 0 )) && order=(after before)
  for name in "${order[@]}"; do
    run "$name" "$round" "${extra[@]/NAME/$name}"
  done
done
echo "load average after: $(cat /proc/loadavg)"

python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(name, round):
    with open(f"{out}/{name}-{round}.json") as f:
        return json.load(f)
same_tokens = load("before", 1)["outputs"] == load("after", 1)["outputs"]
with open(f"{out}/logits-before.npy", "rb") as a, open(f"{out}/logits-after.npy", "rb") as b:
    same_logits = a.read() == b.read()
print(f"tokens identical: {same_tokens}; logits identical byte for byte: {same_logits}")
print()
print("| round | before GB/s | after GB/s | after ÷ before | before tok/s | after tok/s |")
print("| ---: | ---: | ---: | ---: | ---: | ---: |")
ratios = []
for round in range(1, rounds + 1):
    b, a = load("before", round)["metrics"], load("after", round)["metrics"]
    ratio = a["decode_bandwidth_gbps"] / b["decode_bandwidth_gbps"]
    ratios.append(ratio)
    print(f"| {round} | {b['decode_bandwidth_gbps']:.2f} | {a['decode_bandwidth_gbps']:.2f} | {ratio:.3f} | "
          f"{b['decode_tokens_per_s']:.1f} | {a['decode_tokens_per_s']:.1f} |")
print()
print(f"after ÷ before, decode_bandwidth_gbps: median {statistics.median(ratios):.3f} "
      f"(range {min(ratios):.3f}-{max(ratios):.3f}, {rounds} rounds)")
sys.exit(0 if same_tokens and same_logits else 1)
PY
