#!/usr/bin/env bash
# The GPU check: what only a GPU can show about decodelab, in one run of at most ~9
# minutes on a bare, lent GPU machine (docs/gpu.md). A check that cannot pass without
# checking: every stage says what it checked and what it did not, and the script exits
# non-zero when a stage failed, timed out, or (when required) found no time to run.
#
# Stages, in order, each under its own time limit inside an overall budget:
#   preflight         driver, device, toolkit and tools; how the binaries will be had —
#                     a clear stop when neither a build here nor the carried binaries can work
#   build             build here when nvcc is present (sm_90, every core), with the carried
#                     headers of our Debian dependencies; else the carried binaries
#   environment       the binaries load every library and start
#   cuda-tests        the [cuda] tests with DECODELAB_REQUIRE_CUDA=1 (a missing device fails)
#   engine-reference  CUDA (graphs off and on) against the float64 reference, with the same flag
#   logits            --dump-logits of CUDA vs the CPU backend (prefill, and decode at a
#                     128-token prompt, where attention splits its keys), and of graphs on vs
#                     off, within the logit tolerance (decodelab diff-logits); tokens too
#   memcheck          compute-sanitizer on a lab-tiny run, before any timing (required)
#   bandwidth         decode bandwidth at batch 1, llama-1b and llama-8b bf16, graphs off and
#                     on, as a share of the device copy bandwidth measured in the same run
#                     (CUDA event timer: CUPTI's records would cost time inside the steps)
#   ncu               one short decode profiled with scripts/ncu-profile.sh, read by
#                     decodelab ncu; before the lab, so a slow lab cannot starve it
#   lab               the five-bug lab within the stage's time (--max-seconds from it): every
#                     bug slower than its fixed twin, tokens kept (on CUDA up to a near-tie);
#                     no_kv_cache judged at a context `decodelab predict` says shows it
#   nsys              as ncu, with nsys-profile.sh; skipped with a line without the tool
#
# RESULTS_DIR receives summary.md (a section to paste into docs/gpu.md), summary.json,
# gpu-check.log, results.tar.gz (every stage's log, JSON and report) and fixtures.tar.gz
# (the nsys and ncu exports, small, for tests/fixtures/): five files, within what a device
# run brings back.
#
# --dry-run rehearses every stage here, without a GPU: the CPU backend (smaller models)
# stands in for the device, a configure for the build, and stand-in ncu, nsys and
# compute-sanitizer (scripts/stand-ins/) replay the committed fixtures, so that every
# command line, file and parser is exercised; its summary names what was and was not
# checked. --only STAGE,... runs a subset besides
# preflight and environment (a second try on a warm machine reuses build-device/; name
# `build` too to rebuild it after a fix).
#
# usage: scripts/gpu-check.sh [--dry-run] [--only STAGE,...] RESULTS_DIR
# env:   GPU_CHECK_BUDGET_S  overall budget in seconds (default 480, which leaves the device
#                            tool's 600 s command limit 90 s and more after a stage's
#                            --kill-after and the archives; a dry run 960, and twice each
#                            stage's limit)
#        GPU_CHECK_JOBS      build jobs (default: every core)
#        GPU_CHECK_BUNDLE    the carried bundle (default: gpu-bundle/ of this checkout)
set -uo pipefail

usage() {
  echo "usage: $0 [--dry-run] [--only STAGE,...] RESULTS_DIR" >&2
  exit 2
}
dry_run=0
only=""
results_arg=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --only) only="${2:-}"; [[ -n "$only" ]] || usage; shift ;;
    -h | --help) usage ;;
    -*) echo "unknown option $1" >&2; usage ;;
    *) [[ -z "$results_arg" ]] || usage; results_arg="$1" ;;
  esac
  shift
done
[[ -n "$results_arg" ]] || usage

repo="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$results_arg"
results="$(cd "$results_arg" && pwd)"
work="$results/work"
rm -rf "$work"
mkdir -p "$work/fixtures"
log="$results/gpu-check.log"
: >"$log"
rm -f "$results/summary.md" "$results/summary.json" "$results/results.tar.gz" "$results/fixtures.tar.gz"
# A dry run on a small shared CPU is slower than the GPU machine: twice its limits.
budget="${GPU_CHECK_BUDGET_S:-$([[ $dry_run == 1 ]] && echo 960 || echo 480)}"
reserve=20  # seconds kept for the summary and the archives
started=$SECONDS
bundle="${GPU_CHECK_BUNDLE:-$repo/gpu-bundle}"  # what scripts/gpu-bundle.sh assembles, carried there
export repo work results dry_run bundle
export PATH="/usr/local/cuda/bin:$PATH"  # nvcc, cuobjdump, compute-sanitizer, ncu in the usual place
export DECODELAB_HOME="$repo"
export DECODELAB_CACHE_DIR="$work/cache"
export PYTHONUNBUFFERED=1

say() { echo "[gpu-check $(( SECONDS - started ))s] $*" | tee -a "$log"; }

# --- what each stage writes ----------------------------------------------------------------
# A stage runs as `bash -c stage_NAME` under `timeout`, its output in work/NAME.log; it
# states its claims in work/NAME.claims and exits 0 (passed), 3 (skipped: a tool is
# missing, said why) or anything else (failed).
claim() { local kind="$1"; shift; echo "$kind $*" >>"$work/$STAGE.claims"; }
checked() { claim CHECKED "$@"; }
not_checked() { claim NOT_CHECKED "$@"; }
note() { claim NOTE "$@"; echo "note: $*"; }
skip() { not_checked "$@"; echo "skipped: $*"; exit 3; }
fail() { echo "FAILED: $*"; note "$@"; exit 1; }
# Runs a command, echoing it first; its status is the command's.
step() { echo "+ $*"; "$@"; }

# The device as the stages address it: CUDA, or in a dry run the CPU backend.
device_backend() { if [[ $dry_run == 1 ]]; then echo cpu; else echo cuda; fi; }
# A model for a role: the real one on a GPU, a small stand-in in a dry run.
model_for() {
  if [[ $dry_run == 0 ]]; then echo "$1"; else echo lab-tiny; fi
}
# How a run is named in tables: the role, and in a dry run what stood in for it.
model_label() { if [[ $dry_run == 0 || "$1" == lab-tiny ]]; then echo "$1"; else echo "lab-tiny (for $1)"; fi; }

# Binaries: written by preflight/build into work/binaries.env.
load_binaries() {
  # shellcheck disable=SC1091
  source "$work/binaries.env"
  export DECODELAB TESTS BINARIES LD_LIBRARY_PATH
}
decodelab() { "$DECODELAB" "$@"; }

# A base scenario the stages override with --set (the documented schema, lab/scenario/scenario.h).
write_scenario() {  # file model dtype requests batch prompt new_tokens
  cat >"$1" <<YAML
description: written by scripts/gpu-check.sh
model: $2
dtype: $3
backend: auto
workload: {requests: $4, batch_size: $5, prompt_tokens: $6, new_tokens: $7, seed: 0}
run: {warmup: 1, repeats: 3}
YAML
}

# --- stand-ins for a dry run -----------------------------------------------------------------
# Tools a GPU machine has and this one may not (scripts/stand-ins/): each replays what the
# real tool would produce from the committed fixtures, so the scripts' command lines and
# our readers run.
use_stand_ins() {
  export GPU_CHECK_FIXTURES="$repo/tests/fixtures"
  export PATH="$repo/scripts/stand-ins:$PATH"
}

# --- stages ----------------------------------------------------------------------------------

stage_preflight() {
  local env_file="$work/environment.txt"
  command -v python3 >/dev/null || fail "python3 is not on PATH (the readings and the summary need it)"
  local nvcc_version="none"
  command -v nvcc >/dev/null && nvcc_version="$(nvcc --version | grep -o 'release [0-9.]*' | cut -d' ' -f2)"
  local tools=""
  for tool in nvcc cmake ninja c++ ncu nsys compute-sanitizer cuobjdump; do
    local found; found="$(command -v "$tool" || true)"
    if [[ -z "$found" ]]; then
      tools+="(no $tool) "
    elif [[ "$found" == "$repo/scripts/stand-ins/"* ]]; then
      tools+="$tool (stand-in) "
    else
      tools+="$tool "
    fi
  done
  tools="${tools% }"
  echo "tools: $tools"
  {
    echo "nvcc=$nvcc_version"
    echo "tools=$tools"
    echo "host=$(uname -srm), $(nproc) cores"
  } >>"$env_file"

  local bundle_runtime="" bundle_cublas=""
  if [[ -f "$bundle/bundle.env" ]]; then
    # shellcheck disable=SC1091
    source "$bundle/bundle.env"
    bundle_runtime="${CUDA_RUNTIME_VERSION:-}"
    bundle_cublas="${CUBLAS_SONAME:-}"
    echo "carried bundle: CUDA runtime $bundle_runtime, needs $bundle_cublas (built ${BUILT_ON:-?})"
  fi

  # The metrics this ncu knows for this device: ncu-profile.sh asks only for those (an
  # unknown name can make ncu refuse the whole run).
  if command -v ncu >/dev/null; then
    timeout 60 ncu --query-metrics >"$work/ncu-metrics.txt" 2>&1 || true
    echo "ncu --query-metrics: $(grep -c '__' "$work/ncu-metrics.txt") metric lines"
  fi

  if [[ $dry_run == 1 ]]; then
    printf 'device=none (dry run on %s)\ndriver=none\ndriver_cuda=none\n' "$(uname -n)" >>"$env_file"
    [[ -x "$repo/build/decodelab" && -x "$repo/build/decodelab_tests" ]] ||
      fail "a dry run uses build/decodelab and build/decodelab_tests: build them first (cmake --preset release)"
    printf 'DECODELAB=%q\nTESTS=%q\nBINARIES=%q\n' "$repo/build/decodelab" "$repo/build/decodelab_tests" \
      "build/ of this checkout (dry run)" >"$work/binaries.env"
    echo "binaries=build/ of this checkout" >>"$env_file"
    checked "tools found: $tools; python3 for the readings"
    not_checked "the NVIDIA driver, the device and the libraries' versions (no GPU here)"
    return 0
  fi

  command -v nvidia-smi >/dev/null || fail "stop: nvidia-smi is not on PATH: this machine has no NVIDIA driver"
  local query
  query="$(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm,clocks.max.mem \
    --format=csv,noheader 2>&1 | head -1)" || fail "stop: nvidia-smi cannot read the device: $query"
  echo "device: $query"
  local driver_cuda
  driver_cuda="$(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: *[0-9.]*' | grep -o '[0-9.]*$' | head -1)"
  {
    echo "device=$query"
    echo "driver=$(cut -d, -f2 <<<"$query" | tr -d ' ')"
    echo "driver_cuda=$driver_cuda"
  } >>"$env_file"
  nvidia-smi || true

  # How the binaries will be had: built here (nvcc, cmake, a C++ compiler), else carried.
  local can_build=0 build_gap=""
  for tool in nvcc cmake c++; do command -v "$tool" >/dev/null || build_gap+="$tool "; done
  if [[ "$nvcc_version" != none && -n "$driver_cuda" && "${nvcc_version%%.*}" -gt "${driver_cuda%%.*}" ]]; then
    build_gap+="a driver for nvcc's CUDA $nvcc_version (this one supports CUDA $driver_cuda) "
  fi
  [[ -z "$build_gap" ]] && can_build=1
  local carried_ok=0 carried_gap=""
  if [[ -x "$bundle/bin/decodelab" && -n "$bundle_runtime" ]]; then
    # A CUDA X.Y runtime runs on a driver of CUDA X.0 or later (minor-version compatibility).
    local need_major="${bundle_runtime%%.*}" have_major="${driver_cuda%%.*}"
    if [[ -z "$driver_cuda" || "$have_major" -lt "$need_major" ]]; then
      carried_gap="the carried binaries need a driver for CUDA $need_major.x, this one supports CUDA ${driver_cuda:-unknown}"
    fi
    local cublas_dir
    cublas_dir="$(find_library "$bundle_cublas")"
    if [[ -z "$cublas_dir" ]]; then
      carried_gap+="${carried_gap:+; }$bundle_cublas (cuBLAS, not carried) is not on this machine"
    fi
    [[ -z "$carried_gap" ]] && carried_ok=1
    echo "carried binaries: ${carried_gap:-usable} (cuBLAS in ${cublas_dir:-nowhere})"
    if [[ $carried_ok == 1 ]]; then
      local library_path="$bundle/lib:$cublas_dir"
      for dir in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
        [[ -d "$dir" ]] && library_path+=":$dir"
      done
      # Our C++ runtime only where this machine's is older than the one we built with.
      if LD_LIBRARY_PATH="$library_path" "$bundle/bin/decodelab" --version 2>&1 | grep -qE 'GLIBCXX|libstdc\+\+|libgcc_s'; then
        library_path="$bundle/lib/fallback:$library_path"
        echo "this machine's C++ runtime is older than the carried binaries': lib/fallback is used"
      fi
      printf 'DECODELAB=%q\nTESTS=%q\nBINARIES=%q\nLD_LIBRARY_PATH=%q\n' "$bundle/bin/decodelab" \
        "$bundle/bin/decodelab_tests" "carried (gpu-bundle, CUDA $bundle_runtime)" \
        "$library_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" >"$work/binaries.env"
    fi
  else
    carried_gap="no carried binaries (gpu-bundle/ with bundle.env)"
  fi
  # A second try on a warm machine: what an earlier build here left (the build stage
  # rebuilds it when selected).
  local built="$repo/build-device"
  if [[ -x "$built/decodelab" && -x "$built/decodelab_tests" ]]; then
    printf 'DECODELAB=%q\nTESTS=%q\nBINARIES=%q\nLD_LIBRARY_PATH=%q\n' "$built/decodelab" "$built/decodelab_tests" \
      "built here by an earlier check" "${LD_LIBRARY_PATH:-}" >"$work/binaries.env"
    echo "build-device/ holds binaries from an earlier check"
  fi
  echo "can_build=$can_build" >>"$env_file"
  if [[ $can_build == 0 && $carried_ok == 0 ]]; then
    fail "stop: cannot build here (missing: $build_gap) and $carried_gap"
  fi
  checked "driver $(cut -d, -f2 <<<"$query" | tr -d ' ') (CUDA $driver_cuda), device $(cut -d, -f1 <<<"$query");" \
    "build here: $([[ $can_build == 1 ]] && echo "yes (nvcc $nvcc_version)" || echo "no (missing $build_gap)");" \
    "carried binaries: ${carried_gap:-usable}"
}

# The folder holding a shared library, searched where CUDA images keep it (the toolkit,
# the loader's cache, Python wheels); nothing when absent.
find_library() {
  local name="$1" found=""
  [[ -n "$name" ]] || return 0
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
    [[ -e "$dir/$name" ]] && { echo "$dir"; return 0; }
  done
  found="$(ldconfig -p 2>/dev/null | grep -m1 " $name " | sed 's/.*=> //')"
  [[ -n "$found" ]] && { dirname "$found"; return 0; }
  found="$(timeout 30 find / -xdev -name "$name" -not -path '/proc/*' 2>/dev/null | head -1)"
  [[ -n "$found" ]] && dirname "$found"
  return 0
}

stage_build() {
  local deps="$bundle/deps/usr"
  local prefix=()
  [[ -d "$deps" ]] && prefix=(-DCMAKE_PREFIX_PATH="$deps")
  local generator=(-G "Unix Makefiles")
  command -v ninja >/dev/null && generator=(-G Ninja)
  if [[ $dry_run == 1 ]]; then
    # Rehearse the configure the GPU machine runs (the carried dependency headers when
    # gpu-bundle/ exists); compiling stays with the release build of this checkout.
    local rehearsal="$work/configure-rehearsal"
    step cmake -S "$repo" -B "$rehearsal" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90 "${prefix[@]}" || fail "the configure failed"
    if [[ -d "$deps" ]]; then
      local found outside
      found="$(grep -E '^(yaml-cpp_DIR|CLI11_DIR|CLI11_INCLUDE_DIR|nlohmann_json_DIR|Catch2_DIR|ZLIB_INCLUDE_DIR):' \
        "$rehearsal/CMakeCache.txt" | grep -v -- '-NOTFOUND')"
      echo "$found"
      outside="$(grep -v -F "$deps" <<<"$found" || true)"
      rm -rf "$rehearsal"
      [[ -z "$outside" ]] || fail "dependencies found outside the carried gpu-bundle/deps: $outside"
      checked "configure with the carried dependency headers (gpu-bundle/deps): found there"
    else
      rm -rf "$rehearsal"
      note "no gpu-bundle/ here: configured against this machine's packages (run scripts/gpu-bundle.sh first to rehearse the carried ones)"
      checked "the configure command line"
    fi
    not_checked "compiling on the GPU machine (the dry run uses build/ of this checkout)"
    return 0
  fi

  if ! grep -q '^can_build=1' "$work/environment.txt"; then
    skip "no nvcc/cmake/C++ compiler here: the carried binaries are used"
  fi
  local build_dir="$repo/build-device"
  local jobs="${GPU_CHECK_JOBS:-$(nproc)}"
  if step cmake -S "$repo" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DDECODELAB_CUDA=ON \
       -DCMAKE_CUDA_ARCHITECTURES=90 -DDECODELAB_NATIVE=ON "${prefix[@]}" &&
     step cmake --build "$build_dir" -j "$jobs" --target decodelab decodelab_tests; then
    printf 'DECODELAB=%q\nTESTS=%q\nBINARIES=%q\nLD_LIBRARY_PATH=%q\n' "$build_dir/decodelab" \
      "$build_dir/decodelab_tests" "built here (nvcc $(grep '^nvcc=' "$work/environment.txt" | cut -d= -f2), sm_90)" \
      "${LD_LIBRARY_PATH:-}" >"$work/binaries.env"
    checked "built decodelab and decodelab_tests here for sm_90 with $jobs jobs"
    return 0
  fi
  if [[ -f "$work/binaries.env" ]]; then
    note "the build failed: the carried binaries are used instead"
  fi
  fail "the build failed (see this log)"
}

stage_environment() {
  [[ -f "$work/binaries.env" ]] || fail "no binaries: neither built nor carried"
  load_binaries
  echo "binaries: $BINARIES"
  echo "binaries=$BINARIES" >>"$work/environment.txt"
  step ldd "$DECODELAB" "$TESTS"
  if ldd "$DECODELAB" "$TESTS" | grep 'not found'; then fail "libraries are missing (above)"; fi
  step decodelab --version || fail "decodelab does not start"
  step decodelab list >/dev/null || fail "decodelab list failed"
  # Catch2 exits with the number of tests listed: judge the list, not the status.
  echo "+ $TESTS --list-test-names-only"
  "$TESTS" --list-test-names-only >"$work/test-names.txt" 2>&1
  grep -q '^cuda memory and host transfers round-trip$' "$work/test-names.txt" ||
    { cat "$work/test-names.txt"; fail "decodelab_tests does not start, or lacks the [cuda] tests"; }
  echo "$(wc -l <"$work/test-names.txt") test cases listed"
  checked "the binaries load every library (ldd) and start"
}

stage_cuda_tests() {
  load_binaries
  if [[ $dry_run == 1 ]]; then
    echo "+ DECODELAB_REQUIRE_CUDA=1 decodelab_tests [cuda] (expected to fail here: no device)"
    if DECODELAB_REQUIRE_CUDA=1 "$TESTS" "[cuda]" --reporter compact >"$work/cuda-tests-required.out" 2>&1; then
      cat "$work/cuda-tests-required.out"
      fail "DECODELAB_REQUIRE_CUDA=1 let the [cuda] tests pass without a device"
    fi
    local reason
    reason="$(grep -m1 -o "no usable CUDA device: [^']*" "$work/cuda-tests-required.out" | cut -c1-200)"
    [[ -n "$reason" ]] || { cat "$work/cuda-tests-required.out"; fail "the failure does not give the runtime's reason"; }
    echo "failed as it must: $reason"
    step "$TESTS" "[cuda]" || fail "the [cuda] tests do not skip cleanly without DECODELAB_REQUIRE_CUDA"
    checked "DECODELAB_REQUIRE_CUDA=1 fails the [cuda] tests without a device, with the reason ($reason)"
    not_checked "the [cuda] tests on a device (no GPU here)"
    return 0
  fi
  DECODELAB_REQUIRE_CUDA=1 step "$TESTS" "[cuda]" --durations yes || fail "[cuda] tests failed"
  checked "the [cuda] tests on the device with DECODELAB_REQUIRE_CUDA=1: every op against the CPU backend," \
    "transfers, both timers, graph capture and replay"
}

stage_engine_reference() {
  load_binaries
  if [[ $dry_run == 1 ]]; then
    step "$TESTS" "[engine_reference]" || fail "[engine_reference] failed on the CPU backend"
    checked "the CPU backend against the float64 reference"
    not_checked "CUDA, graphs off and on, against the reference (no GPU here)"
    return 0
  fi
  DECODELAB_REQUIRE_CUDA=1 step "$TESTS" "[engine_reference]" || fail "[engine_reference] failed"
  checked "CUDA with graphs off and on, and the CPU backend, against the float64 reference (logits and tokens)"
}

stage_logits() {
  load_binaries
  local backend; backend="$(device_backend)"
  local scenario="$work/logits.yaml" failures=0 figures="$work/logits.figures.txt"
  local one_pass=(--set "run={warmup: 0, repeats: 1}" --quiet)
  local other_name="CUDA"
  # A dry run has no second device: 1 CPU thread stands in, which rounds as all threads do,
  # so the comparisons below exercise the commands and files only.
  [[ $dry_run == 1 ]] && other_name="CPU 1 thread"
  other_args() { if [[ $dry_run == 1 ]]; then echo "--backend cpu --threads 1"; else echo "--backend cuda"; fi; }
  # CUDA against the CPU backend: the first token's logits (prefill), before greedy
  # choices can make two correct runs diverge.
  for case in "lab-tiny fp32" "llama-1b bf16"; do
    local role model dtype; read -r role dtype <<<"$case"
    model="$(model_for "$role")"
    write_scenario "$scenario" "$model" "$dtype" 2 2 32 1
    local reference="$work/logits-$model-$dtype-cpu" other="$work/logits-$model-$dtype-$backend"
    step decodelab run "$scenario" --backend cpu "${one_pass[@]}" --dump-logits "$reference.npy" || { failures=1; continue; }
    # shellcheck disable=SC2046
    step decodelab run "$scenario" $(other_args) "${one_pass[@]}" --dump-logits "$other.npy" || { failures=1; continue; }
    local line
    line="$(decodelab diff-logits "$reference.npy" "$other.npy" --dtype "$dtype" 2>&1)" || failures=1
    echo "$line"
    echo "$(model_label "$role") $dtype prefill, $other_name vs CPU: $line" >>"$figures"
  done
  # Decode at a llama shape: a 128-token prompt, a few steps, so that attention reads a cache
  # long enough to split its keys across blocks (engine/cuda/host/attention_plan.h). The
  # runs are held to the same trajectory: where their tokens part (a near-tie), both are
  # run again up to that step, and the logits at the step they parted on are compared.
  decode_logits llama-1b bf16 128 4 || failures=1
  # Graphs on against off, on CUDA: the same kernels and plans, so the same tokens over a
  # whole generation and logits within the tolerance (bitwise, when cuBLAS is deterministic).
  local model; model="$(model_for llama-1b)"
  write_scenario "$scenario" "$model" bf16 2 2 64 32
  local off="$work/graphs-off" on="$work/graphs-on"
  if step decodelab run "$scenario" --backend "$backend" "${one_pass[@]}" --dump-logits "$off.npy" --json "$off.json" &&
     step decodelab run "$scenario" --backend "$backend" "${one_pass[@]}" --set run.cuda_graphs=true \
       --dump-logits "$on.npy" --json "$on.json"; then
    local line tokens
    line="$(decodelab diff-logits "$off.npy" "$on.npy" --dtype bf16 2>&1)" || failures=1
    tokens="$(python3 "$repo/scripts/gpu_check_report.py" tokens "$off.json" "$on.json" 2>&1)" || failures=1
    echo "$line"; echo "$tokens"
    echo "$(model_label llama-1b) bf16, graphs on vs off: $line; $tokens" >>"$figures"
  else
    failures=1
  fi
  [[ $failures == 0 ]] || fail "a run failed or the logits/tokens disagree (above)"
  if [[ $dry_run == 1 ]]; then
    checked "the commands and files: runs, --dump-logits, diff-logits and the token reading on CPU outputs"
    not_checked "any agreement: CPU 1 thread vs all threads round alike, and the graphs flag does nothing on the" \
      "CPU backend (no GPU here: CUDA vs CPU and graphs vs eager are the GPU's to show)"
  else
    checked "CUDA vs CPU logits: prefill (lab-tiny fp32, llama-1b bf16) and decode at a 128-token prompt" \
      "(llama-1b bf16, split attention); graphs on vs off (llama-1b bf16, 31 steps: tokens and logits)," \
      "within the logit tolerance"
  fi
}

# decode_logits ROLE DTYPE PROMPT STEPS: CPU vs the device on one request's decode logits.
decode_logits() {
  local role="$1" dtype="$2" prompt="$3" steps="$4" model
  model="$(model_for "$role")"
  local scenario="$work/decode-logits.yaml" base="$work/decode-$model-$dtype"
  local one_pass=(--set "run={warmup: 0, repeats: 1}" --quiet)
  for _ in 1 2; do
    write_scenario "$scenario" "$model" "$dtype" 1 1 "$prompt" "$steps"
    # shellcheck disable=SC2046
    step decodelab run "$scenario" --backend cpu "${one_pass[@]}" --dump-logits "$base-cpu.npy" --json "$base-cpu.json" &&
      step decodelab run "$scenario" $(other_args) "${one_pass[@]}" --dump-logits "$base-other.npy" \
        --json "$base-other.json" || return 1
    local tokens parted
    tokens="$(python3 "$repo/scripts/gpu_check_report.py" tokens "$base-cpu.json" "$base-other.json" 2>&1)"
    parted="$(grep -o 'first at token [0-9]*' <<<"$tokens" | grep -o '[0-9]*$')"
    # Identical tokens, or parted only at the last one: the last logits are comparable
    # (the latter are the logits the differing choice was made from).
    if [[ -z "$parted" || "$parted" == $(( steps - 1 )) ]]; then
      local line
      line="$(decodelab diff-logits "$base-cpu.npy" "$base-other.npy" --dtype "$dtype" 2>&1)"
      local status=$?
      echo "$line"
      echo "$(model_label "$role") $dtype decode (prompt $prompt, $steps steps, logits of the last), $other_name vs CPU:" \
        "$line; $tokens" >>"$figures"
      return $status
    fi
    echo "the runs parted at token $parted: both again up to it, to compare the logits they chose it from"
    steps=$(( parted + 1 ))
  done
  echo "the runs parted again before the step they were cut to: their logits disagree"
  return 1
}

stage_bandwidth() {
  load_binaries
  # CUDA events time the ops here: CUPTI's activity records (an API record per runtime call,
  # flushed at each take) would cost host time inside the very steps measured.
  export DECODELAB_CUDA_TIMER=events
  local backend; backend="$(device_backend)"
  local repeats=5
  [[ $dry_run == 1 ]] && repeats=2
  step decodelab roofline --measure --backend "$backend" --repeats "$repeats" --json "$work/roofline.json" ||
    fail "roofline --measure failed"
  local scenario="$work/decode-batch1.yaml" runs=()
  for model in llama-1b llama-8b; do
    # A dry run streams lab-small (336 MB of bf16 weights: past the caches, as decode is).
    local actual=$model prompt=128 new_tokens=128 label=$model
    [[ $dry_run == 1 ]] && actual=lab-small prompt=4 new_tokens=6 label="lab-small (for $model)"
    write_scenario "$scenario" "$actual" bf16 1 1 "$prompt" "$new_tokens"
    local repeats_args=()
    [[ $dry_run == 1 ]] && repeats_args=(--set "run.warmup=0" --set "run.repeats=2")
    for graphs in false true; do
      local out="$work/bandwidth-$model-graphs-$graphs.json"
      step decodelab run "$scenario" --backend "$backend" --quiet --set "run.cuda_graphs=$graphs" "${repeats_args[@]}" \
        --json "$out" ||
        fail "the $actual run (graphs $graphs) failed"
      runs+=(--run "$label bf16 batch 1, graphs $([[ $graphs == true ]] && echo on || echo off)=$out")
    done
  done
  # On a GPU a copy's bytes are its traffic, so decode cannot beat it by much. On a CPU a
  # copy's stores also read their destination (write-allocate), so read-only decode can
  # beat it by a margin no bound holds honestly: a dry run judges no share (0 = none).
  local max_share=1.2
  [[ $dry_run == 1 ]] && max_share=0
  step python3 "$repo/scripts/gpu_check_report.py" bandwidth --roofline "$work/roofline.json" "${runs[@]}" \
    --max-share "$max_share" --out "$work/bandwidth.figures.json" || fail "a bandwidth figure is missing or implausible"
  if [[ $dry_run == 1 ]]; then
    checked "the commands, the JSON fields read and the share's arithmetic on CPU stand-ins (lab-small)"
    not_checked "whether the shares are plausible (a CPU's copy bandwidth bounds nothing); llama-1b and llama-8b" \
      "on the GPU, CUDA graphs (no GPU here)"
  else
    checked "decode GB/s at batch 1 (llama-1b, llama-8b, bf16, graphs off and on, CUDA event timer) against the" \
      "copy GB/s of this run, each share at most 120%"
  fi
}

# Seconds left to this stage (run_stage exports its deadline).
stage_seconds_left() { echo $(( STAGE_DEADLINE - $(date +%s) )); }

# The no_kv_cache prompt length at which `decodelab predict` expects the bug to cost at
# least 1.5x end to end on this device: the lab's own context is tiny, and on a GPU a
# tiny prefix recomputed costs little more than a step. The smallest candidate that clears
# it (the largest, said so, when none does). Candidates stay within lab-tiny's 1024
# positions with the scenario's 24 new tokens.
no_kv_cache_prompt() {
  local backend="$1" prompt predicted=""
  shift
  for prompt in 8 64 256 768; do
    decodelab predict "$repo/scenarios/bugs/no_kv_cache.yaml" --backend "$backend" --quiet "$@" \
      --set "workload.prompt_tokens=$prompt" --json "$work/predict-no_kv_cache-$prompt.json" >/dev/null 2>&1 || continue
    predicted="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["end_to_end_slowdown"])' \
      "$work/predict-no_kv_cache-$prompt.json" 2>/dev/null)" || continue
    echo "predicted no_kv_cache end-to-end slowdown at a $prompt-token prompt: ${predicted}x" >&2
    if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 1.5 else 1)' "$predicted"; then
      echo "$prompt"; return 0
    fi
  done
  echo "no candidate prompt is predicted to show 1.5x: the largest is used" >&2
  echo 768
}

stage_lab() {
  load_binaries
  local backend; backend="$(device_backend)"
  # no_kv_cache is judged on its own at a context long enough to show on this device; the
  # lab runs the others. A dry run needs the plumbing only, from the bug whose cost shows
  # most reliably on a CPU.
  local only="host_sync,non_contiguous,fp32_ops,sequential_generation"
  local set_args=() kv_model=()
  if [[ $dry_run == 1 ]]; then
    only=host_sync
    set_args=(--set "run={warmup: 1, repeats: 1}")
    kv_model=(--set model=lab-tiny)  # the plumbing, at a CPU's cost
  fi
  local prompt; prompt="$(no_kv_cache_prompt "$backend" "${kv_model[@]}")"
  # The lab's pairs get half of what is left after a share kept for no_kv_cache's compare,
  # the rest covers loading, warm-ups, analysis and reports: the lab then ends inside this
  # stage's limit instead of running to its 160 s default past it.
  local left; left="$(stage_seconds_left)"
  local lab_seconds=$(( left * 2 / 5 )) kv_seconds=$(( left / 5 ))
  (( lab_seconds < 10 )) && lab_seconds=10
  (( kv_seconds < 5 )) && kv_seconds=5
  echo "stage time left ${left}s: the lab's pairs ${lab_seconds}s, no_kv_cache's ${kv_seconds}s"
  step decodelab lab --backend "$backend" --only "$only" --max-seconds "$lab_seconds" "${set_args[@]}" \
    --json "$work/lab.json" --report "$work/lab-report" || fail "decodelab lab failed"
  local kv_args=(--set "run.max_seconds=$kv_seconds")
  # Six pairs at least: the fewest that give the 95% interval the verdict is read from.
  [[ $dry_run == 1 ]] && kv_args=(--set "run={warmup: 1, min_repeats: 6, max_repeats: 20, max_seconds: 15}")
  step decodelab compare "$repo/scenarios/bugs/no_kv_cache.yaml" --backend "$backend" --quiet "${kv_model[@]}" \
    --set "workload.prompt_tokens=$prompt" "${kv_args[@]}" --json "$work/no_kv_cache.json" ||
    fail "decodelab compare no_kv_cache failed"
  step python3 "$repo/scripts/gpu_check_report.py" lab "$work/lab.json" \
    --compare "no_kv_cache (prompt $prompt)=$work/no_kv_cache.json" --out "$work/lab.figures.json" ||
    fail "a bug was not slower than its fixed twin, or changed the tokens"
  if [[ $dry_run == 1 ]]; then
    checked "the lab's JSON and a compare's read and checked for host_sync and no_kv_cache (lab-tiny, prompt" \
      "$prompt from decodelab predict on the CPU) on the CPU backend"
    not_checked "the five bugs on the GPU; tokens up to a near-tie (exact on a CPU) (no GPU here)"
  else
    checked "all five bugs slower than the fixed twin, tokens kept (up to a near-tie of the fixed run);" \
      "no_kv_cache at a ${prompt}-token prompt (predicted to show), its interval above 1"
  fi
}

# One short lab-tiny bf16 decode: small exports, a step's kernels.
profile_args() { echo "--set model=lab-tiny --set dtype=bf16 --set workload.requests=1 --set workload.batch_size=1 --set workload.new_tokens=3"; }

stage_ncu() {
  load_binaries
  command -v ncu >/dev/null || skip "ncu (Nsight Compute) is not on PATH"
  local out="$work/ncu/decode"
  mkdir -p "$work/ncu"
  # shellcheck disable=SC2046
  local listing=()
  [[ -s "$work/ncu-metrics.txt" ]] && listing=(NCU_AVAILABLE_METRICS="$work/ncu-metrics.txt")
  # shellcheck disable=SC2046
  env DECODELAB="$DECODELAB" NCU_OUT="$out" NCU_LAUNCH_COUNT=40 "${listing[@]}" \
    "$repo/scripts/ncu-profile.sh" "$repo/scenarios/examples/quickstart.yaml" -- $(profile_args) 2>&1 |
    tee "$work/ncu-profile.out"
  [[ ${PIPESTATUS[0]} == 0 ]] || fail "ncu-profile.sh failed"
  local dropped
  dropped="$(grep -o '^ncu-profile: [^ ]* is not among' "$work/ncu-profile.out" | cut -d' ' -f2 | paste -sd, -)"
  [[ -n "$dropped" ]] && note "metrics this ncu does not list for the device, not collected: $dropped"
  step decodelab ncu "$out-raw.csv" || fail "decodelab ncu could not read the wide export"
  step decodelab ncu "$out-details.csv" >/dev/null || fail "decodelab ncu could not read the details export"
  cp "$out-raw.csv" "$work/fixtures/ncu_decode_raw.csv"
  cp "$out-details.csv" "$work/fixtures/ncu_decode_details.csv"
  if [[ $dry_run == 1 ]]; then
    checked "ncu-profile.sh's command lines and decodelab ncu on the committed fixtures (a stand-in ncu)"
    not_checked "hardware counters of our kernels (no GPU here)"
  else
    checked "one lab-tiny bf16 decode step's kernels profiled and read; exports in fixtures.tar.gz"
  fi
}

stage_nsys() {
  load_binaries
  command -v nsys >/dev/null || skip "nsys (Nsight Systems) is not on PATH"
  local out="$work/nsys/decode"
  mkdir -p "$work/nsys"
  # shellcheck disable=SC2046
  DECODELAB="$DECODELAB" NSYS_OUT="$out" \
    step "$repo/scripts/nsys-profile.sh" "$repo/scenarios/examples/quickstart.yaml" $(profile_args) ||
    fail "nsys-profile.sh failed"
  step decodelab nsys "${out}_cuda_gpu_trace.csv" "${out}_cuda_api_trace.csv" "${out}_nvtx_pushpop_trace.csv" \
    --nvtx 'step [0-9]+' || fail "decodelab nsys could not read the exports"
  for report in cuda_gpu_trace cuda_api_trace nvtx_pushpop_trace; do
    cp "${out}_$report.csv" "$work/fixtures/nsys_decode_$report.csv"
  done
  if [[ $dry_run == 1 ]]; then
    checked "nsys-profile.sh's command lines and decodelab nsys on the committed fixtures (a stand-in nsys)"
    not_checked "a timeline of our run (no GPU here)"
  else
    checked "one lab-tiny bf16 decode traced and read; exports in fixtures.tar.gz"
  fi
}

stage_memcheck() {
  load_binaries
  command -v compute-sanitizer >/dev/null || skip "compute-sanitizer is not on PATH"
  # Events, not CUPTI, under the sanitizer (both want the same profiling hooks).
  DECODELAB_CUDA_TIMER=events step compute-sanitizer --tool memcheck --error-exitcode 3 "$DECODELAB" run \
    "$repo/scenarios/examples/quickstart.yaml" --backend "$(device_backend)" --quiet --set workload.new_tokens=8 \
    --set "run={warmup: 0, repeats: 1}" || fail "memcheck found errors, or the run failed"
  if [[ $dry_run == 1 ]]; then
    checked "the command line (a stand-in compute-sanitizer)"
    not_checked "device memory accesses (no GPU here)"
  else
    checked "no memory error in a lab-tiny run (compute-sanitizer memcheck)"
  fi
}

export -f say claim checked not_checked note skip fail step device_backend model_for model_label load_binaries decodelab \
  write_scenario find_library profile_args \
  stage_preflight stage_build stage_environment stage_cuda_tests stage_engine_reference stage_logits decode_logits \
  stage_bandwidth stage_lab stage_ncu stage_nsys stage_memcheck stage_seconds_left no_kv_cache_prompt

# --- the runner ----------------------------------------------------------------------------------
stopped=""
selected() { [[ -z "$only" || ",$only," == *",$1,"* || "$1" == preflight || "$1" == environment ]]; }

# run_stage NAME LIMIT_S REQUIRED: REQUIRED=1 when running out of time fails the check.
run_stage() {
  local name="$1" limit="$2" required="$3"
  local left=$(( budget - (SECONDS - started) - reserve ))
  local status begin=$SECONDS
  if [[ -n "$stopped" ]]; then
    status="not run: $stopped"
  elif ! selected "$name"; then
    status="not run: not selected (--only)"
  elif (( left < 15 )); then
    status="not run: out of time"
  else
    (( dry_run == 1 )) && limit=$(( limit * 2 ))
    (( limit > left )) && limit=$left
    say "stage $name (limit ${limit}s)"
    STAGE_DEADLINE=$(( $(date +%s) + limit )) STAGE="$name" timeout --kill-after=10 "$limit" bash -c "set -uo pipefail; stage_${name//-/_}" \
      >"$work/$name.log" 2>&1 </dev/null
    case $? in
      0) status="passed" ;;
      3) status="skipped" ;;
      124 | 137) status="timed out"; echo "NOTE timed out after ${limit}s" >>"$work/$name.claims" ;;
      *) status="failed" ;;
    esac
  fi
  local seconds=$(( SECONDS - begin ))
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$seconds" "$required" >>"$work/stages.tsv"
  say "stage $name: $status in ${seconds}s"
  [[ -f "$work/$name.log" ]] && tail -n 15 "$work/$name.log" | sed 's/^/    /' >>"$log"
  if [[ "$name" == preflight && "$status" != passed ]]; then stopped="preflight stopped the check"; fi
}

say "decodelab GPU check$([[ $dry_run == 1 ]] && echo " (dry run: CPU stand-ins)") in $repo, budget ${budget}s"
export STAGE STAGE_DEADLINE
[[ $dry_run == 1 ]] && use_stand_ins
run_stage preflight 60 1
run_stage build 300 1
run_stage environment 30 1
run_stage cuda-tests 120 1
run_stage engine-reference 90 1
run_stage logits 120 1
run_stage memcheck 90 1
run_stage bandwidth 150 1
run_stage ncu 120 1
run_stage lab 180 1
run_stage nsys 90 0

# --- results ---------------------------------------------------------------------------------------
for file in "$work"/*.log; do  # every log under a few MB (head and tail)
  if (( $(stat -c %s "$file") > 4000000 )); then
    { head -c 1500000 "$file"; echo; echo "[... cut by gpu-check ...]"; tail -c 1500000 "$file"; } >"$file.cut"
    mv "$file.cut" "$file"
  fi
done
commit="$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$repo" diff --quiet HEAD 2>/dev/null || commit+=" (with uncommitted changes)"
python3 "$repo/scripts/gpu_check_report.py" summary --work "$work" --results "$results" \
  --mode "$([[ $dry_run == 1 ]] && echo dry-run || echo real)" --commit "$commit" \
  --total-seconds $(( SECONDS - started )) >/dev/null
summary_status=$?
tar -czf "$results/results.tar.gz" -C "$results" work summary.json summary.md 2>/dev/null
tar -czf "$results/fixtures.tar.gz" -C "$work" fixtures
rm -rf "$work"

{
  echo
  [[ -f "$results/summary.md" ]] && cat "$results/summary.md"
  echo "results: $results (summary.md, summary.json, gpu-check.log, results.tar.gz, fixtures.tar.gz)"
} | tee -a "$log"
if [[ $summary_status == 0 ]]; then
  say "PASS"
  exit 0
fi
say "FAIL: a stage failed, timed out or found no time (see the table)"
exit 1
