# Shared by ncu-profile.sh and nsys-profile.sh (sourced, not run): the usage, finding the
# decodelab binary and the NVIDIA profiler each wraps, the run they profile and the name of
# its reports. Both exit 2 with the calling script's name when something is missing.

# The usage (the calling script's opening comment) on -h/--help or without a scenario, then
# $decodelab and the tool, each checked.
profile_setup() {  # script-name tool tool-description script-path script-args...
  local name="$1" tool="$2" description="$3" script="$4"
  shift 4
  if [[ $# -lt 1 || "$1" == "-h" || "$1" == "--help" ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$script"
    exit 2
  fi
  find_decodelab "$name" "$(cd "$(dirname "$script")/.." && pwd)"
  require_on_path "$name" "$tool" "$description"
}

# Sets $decodelab: $DECODELAB, else build/ or build-gpu/ of this checkout, else PATH.
find_decodelab() {  # script-name repo-root
  decodelab="${DECODELAB:-}"
  for candidate in "$2/build/decodelab" "$2/build-gpu/decodelab"; do
    [[ -z "$decodelab" && -x "$candidate" ]] && decodelab="$candidate"
  done
  [[ -z "$decodelab" ]] && decodelab="$(command -v decodelab || true)"
  if [[ -z "$decodelab" ]]; then
    echo "$1: no decodelab binary (build it, or set DECODELAB)" >&2
    exit 2
  fi
}

require_on_path() {  # script-name tool description
  if ! command -v "$2" >/dev/null; then
    echo "$1: $2 ($3) is not on PATH" >&2
    exit 2
  fi
}

# Sets $profiled_run, the command a profiler wraps: the scenario on the CUDA backend, quiet,
# its ops timed with CUDA events (DECODELAB_CUDA_TIMER=events), since CUPTI belongs to the
# profiler.
profiled_run_of() {  # scenario
  profiled_run=(env DECODELAB_CUDA_TIMER=events "$decodelab" run "$1" --backend cuda --quiet)
}

# The reports' base name: the given one (the script's *_OUT), else <tool>-<scenario's name>.
report_base() {  # tool scenario [given]
  if [[ -n "${3:-}" ]]; then
    echo "$3"
  else
    echo "$1-$(basename "${2%.yaml}")"
  fi
}
