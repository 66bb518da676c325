#!/usr/bin/env bash
# Screenshots of each bug's comparison page for the docs, taken by the browser test's own
# checker (tests/browser/check_pages.py: the page must pass it) at 1600 px, the top of the
# page (the lesson, the slowdown with its verdict and prediction, why slower): docs/screenshots/compare-<bug>.png.
# Usage: scripts/report-screenshots.sh LAB_REPORT_DIR [CLIP_HEIGHT]
#   where LAB_REPORT_DIR was written by `decodelab lab --report LAB_REPORT_DIR`.
# Needs what the browser test needs: DECODELAB_SETUP_EXTRAS=browser scripts/setup.sh.
set -euo pipefail
lab="${1:?usage: scripts/report-screenshots.sh LAB_REPORT_DIR [CLIP_HEIGHT]}"
clip="${2:-1300}"
root="$(cd "$(dirname "$0")/.." && pwd)"
browser="$(command -v chromium || command -v chromium-browser)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mapfile -t pages < <(find "$lab" -mindepth 2 -maxdepth 2 -name report.html | sort)
((${#pages[@]} > 0)) || { echo "report-screenshots: no <bug>/report.html under $lab" >&2; exit 2; }
/usr/bin/python3 "$root/tests/browser/check_pages.py" --browser "$browser" --widths 1600 --clip-height "$clip" \
  --screenshots "$work" --root "$lab" "${pages[@]}"
mkdir -p "$root/docs/screenshots"
for page in "${pages[@]}"; do
  bug="$(basename "$(dirname "$page")")"
  cp "$work/$bug-report-1600.png" "$root/docs/screenshots/compare-$bug.png"
  echo "report-screenshots: docs/screenshots/compare-$bug.png ($(stat -c %s "$root/docs/screenshots/compare-$bug.png") bytes)"
done
