#!/usr/bin/env bash
# Renders a decodelab HTML report in headless Chromium and checks that it rendered and
# fetched nothing: the page must be self-contained (inline CSS and SVG, no scripts,
# fonts, images or other requests). Usage: scripts/check-report.sh REPORT.html [SCREENSHOT.png]
# Needs Debian's chromium (apt-get install -y chromium). Exit 0 when all checks pass.
set -euo pipefail

report="${1:?usage: scripts/check-report.sh REPORT.html [SCREENSHOT.png]}"
[[ -f "$report" ]] || { echo "check-report: no such file: $report" >&2; exit 2; }
browser="$(command -v chromium || command -v chromium-browser || true)"
[[ -n "$browser" ]] || { echo "check-report: chromium not found (apt-get install -y chromium)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
screenshot="${2:-$work/report.png}"
url="file://$(realpath "$report")"
failures=0
fail() { echo "check-report: FAIL: $*" >&2; failures=$((failures + 1)); }

# 1. Static: nothing in the page may reference another resource. (The SVG namespace URI
#    is a name, never fetched; fragment references like url(#hatch) stay in the page.)
if grep -qiE '<script|<link|<img|<iframe|<object|<embed|@import|@font-face' "$report"; then
  fail "the page has an element or rule that loads a resource"
fi
if grep -oiE '(src|href)="[^"#][^"]*"' "$report" | grep -q .; then fail "the page references $(grep -oiE '(src|href)="[^"#][^"]*"' "$report" | head -1)"; fi
if grep -oE 'url\([^#)][^)]*\)' "$report" | grep -q .; then fail "the page references $(grep -oE 'url\([^#)][^)]*\)' "$report" | head -1)"; fi

# 2. Render: a screenshot, the DOM as Chromium parsed it, and the network log of both runs.
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
       --no-first-run --hide-scrollbars --window-size=1200,4200)
"$browser" "${flags[@]}" --user-data-dir="$(mktemp -d -p "$work")" --log-net-log="$work/net-shot.json" \
  --screenshot="$screenshot" "$url" >"$work/shot.log" 2>&1 || fail "chromium could not take a screenshot (see below)"
"$browser" "${flags[@]}" --user-data-dir="$(mktemp -d -p "$work")" --log-net-log="$work/net-dom.json" \
  --dump-dom "$url" >"$work/dom.html" 2>"$work/dom.log" || fail "chromium could not load the page"

# 3. Rendered: the screenshot exists and is not blank; the parsed DOM holds the report.
if [[ ! -s "$screenshot" ]]; then
  fail "no screenshot was written"; tail -5 "$work/shot.log" >&2 || true
elif (( $(stat -c %s "$screenshot") < 20000 )); then
  fail "the screenshot is nearly empty ($(stat -c %s "$screenshot") bytes)"
fi
for needle in '<h2>Summary' '<h2>Roofline' '<h2>Decode step timeline' '<svg'; do
  grep -q "$needle" "$work/dom.html" || fail "the rendered page lacks $needle"
done

# 4. Fetched nothing: no request made on the page's behalf in Chromium's network logs.
#    The page's own requests carry the page's network isolation key (file://); Chromium's
#    background service requests (update checks, clock sync) carry none and are not the page's.
for log in "$work/net-shot.json" "$work/net-dom.json"; do
  [[ -s "$log" ]] || { fail "chromium wrote no network log"; continue; }
  fetched="$(grep '"network_isolation_key":"file://' "$log" | grep -oE '"url":"[^"]+"' | sort -u || true)"
  [[ -z "$fetched" ]] || fail "the page fetched: $(echo "$fetched" | head -3 | tr '\n' ' ')"
done

if (( failures > 0 )); then exit 1; fi
echo "check-report: ok: $report rendered ($(stat -c %s "$screenshot") byte screenshot${2:+ at $screenshot}) and fetched nothing"
