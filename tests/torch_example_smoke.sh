#!/usr/bin/env bash
# ctest torch_example_smoke: the PyTorch example end to end where the torch extra is installed
# (.venv/ made by `DECODELAB_SETUP_EXTRAS=torch ./scripts/setup.sh`, or by hand:
# /usr/bin/python3 -m venv .venv && .venv/bin/pip install -r requirements/torch.txt); CMake registers
# it only where .venv/ exists, and a .venv/ without torch fails it. The example runs two bugs with
# record_function ranges and writes its trace with torch 2.x's export_chrome_trace();
# `decodelab diagnose --json` must name exactly those two — the path a user takes.
#   tests/torch_example_smoke.sh DECODELAB SOURCE_DIR OUT_DIR
set -euo pipefail
decodelab="$1" source="$2" out="$3"

python="$source/.venv/bin/python"
if [[ ! -x "$python" ]] || ! "$python" -c "import torch" >/dev/null 2>&1; then
  echo "FAIL: torch does not import in $source/.venv (DECODELAB_SETUP_EXTRAS=torch ./scripts/setup.sh installs it)"
  exit 1
fi

trace="$out/torch_example.json.gz" findings="$out/torch_example_diagnosis.json"
rm -f "$trace" "$findings"
"$python" "$source/examples/pytorch/generate.py" --bug fp32_ops=norms --bug host_sync=layer \
  --requests 2 --batch-size 2 --prompt-length 4 --new-tokens 4 --ranges --trace "$trace"
"$decodelab" diagnose "$trace" --json "$findings"
"$python" - "$findings" <<'CHECK'
import json, sys
diagnosis = json.load(open(sys.argv[1]))
names = [bug["name"] for bug in diagnosis["bugs"]]
variants = [bug.get("variant") for bug in diagnosis["bugs"]]
if not diagnosis["diagnosed"] or diagnosis["trace"]["source"] != "torch.profiler" or names != ["host_sync", "fp32_ops"] or variants != ["layer", "norms"]:
    sys.exit(f"expected host_sync (layer) and fp32_ops (norms) from a torch.profiler trace, got {list(zip(names, variants))}")
CHECK
