# Shared by ncu-profile.sh and nsys-profile.sh (sourced, not run): finding the decodelab
# binary and the NVIDIA profiler each wraps. Both exit 2 with the calling script's name
# when something is missing.

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
