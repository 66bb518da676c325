#!/usr/bin/env python3
"""Regenerates the torch.profiler traces in tests/data/torch/ and their manifest.

Each case runs one of the two PyTorch programs (generate.py, the course example, and
other_decoder.py, a different decoder) with some bugs switched on, writes its trace
(gzip-compressed Kineto JSON), and records in manifest.json what was switched on and which
findings `decodelab diagnose` must report — the switched-on bugs, except where
docs/diagnosis.md says the trace cannot show them (then `unseen` says which and why, and the
test checks that `limits` says so). tests/test_torch_diagnosis.cpp reads the manifest; the
tests never need torch.

    /usr/bin/python3 -m venv .venv && .venv/bin/pip install -r requirements/torch.txt
    .venv/bin/python examples/pytorch/make_test_traces.py [--out tests/data/torch]

Every trace is recorded on the CPU (the development machines have no GPU) by torch 2.x's own
export_chrome_trace(), except the legacy-export traces kept from torch 1.13 (KEPT_LAYOUTS).

The GPU-shaped traces are made from some of these by gpu_shaped_trace.py (no torch needed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import gpu_shaped_trace

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = ["--requests", "2", "--batch-size", "2", "--prompt-length", "4", "--new-tokens", "4"]

# The course example: every bug alone, the fixed path, combinations; each at both shapes,
# one of the two with record_function ranges and the other without.
EXAMPLE_CASES = [
    ("fixed", []),
    ("no_kv_cache", ["no_kv_cache"]),
    ("non_contiguous-copy", ["non_contiguous=copy"]),
    ("non_contiguous-strided", ["non_contiguous=strided"]),
    ("host_sync-token", ["host_sync=token"]),
    ("host_sync-sequence", ["host_sync=sequence"]),
    ("host_sync-layer", ["host_sync=layer"]),
    ("fp32_ops-norms", ["fp32_ops=norms"]),
    ("fp32_ops-matmuls", ["fp32_ops=matmuls"]),
    ("fp32_ops-all", ["fp32_ops=all"]),
    ("sequential", ["sequential_generation"]),
    ("cache+token", ["no_kv_cache", "host_sync=token"]),
    ("copy+fp32", ["non_contiguous=copy", "fp32_ops=all"]),
    ("layer+sequential", ["host_sync=layer", "sequential_generation"]),
    ("cache+copy", ["no_kv_cache", "non_contiguous=copy"]),
    ("norms+sequential+token", ["fp32_ops=norms", "sequential_generation", "host_sync=token"]),
    ("cache+matmuls+sequential", ["no_kv_cache", "fp32_ops=matmuls", "sequential_generation"]),
    ("strided+sequence", ["non_contiguous=strided", "host_sync=sequence"]),
    ("copy+layer+norms", ["non_contiguous=copy", "host_sync=layer", "fp32_ops=norms"]),
    ("all-five", ["no_kv_cache", "non_contiguous=copy", "host_sync=token", "fp32_ops=all", "sequential_generation"]),
]


ORDER = ["no_kv_cache", "non_contiguous", "host_sync", "fp32_ops", "sequential_generation"]


def expected_variants(bugs: list[str], batched: bool) -> dict:
    """The variant each finding must carry. Two differ from the switch: a strided cache read at
    batch > 1 shows as a copy (torch.matmul cannot flatten the view and clones it), and per-token
    and per-sequence reads read alike with one sequence per group."""
    variants = {}
    for bug in bugs:
        name, _, variant = bug.partition("=")
        if name == "non_contiguous":
            variant = "copy" if variant == "copy" or batched else "strided"
        elif name == "host_sync":
            variant = variant or "token"
            if variant == "sequence" and not batched:
                variant = "token"
        elif name == "fp32_ops":
            variant = variant or "all"
        if variant:
            variants[name] = variant
    return variants


KEPT_LAYOUTS = ("torch-export",)


def run(program: str, arguments: list[str], trace: str, layout: str) -> None:
    layout_option = [] if layout == "hf" else ["--trace-layout", layout]
    command = [sys.executable, os.path.join(HERE, program), *arguments, *layout_option, "--trace", trace]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{result.stderr}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "..", "..", "tests", "data", "torch"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest = []
    kept = []  # entries of traces torch 2.x cannot make, kept from the last run
    if os.path.exists(os.path.join(args.out, "manifest.json")):
        with open(os.path.join(args.out, "manifest.json")) as file:
            kept = [entry for entry in json.load(file)["cases"] if entry["layout"] in KEPT_LAYOUTS]

    def case(name, program, arguments, bugs, unseen=None, layout="kineto", batched=True, variants=None):
        file = f"{name}.json.gz"
        run(program, arguments, os.path.join(args.out, file), layout)
        unseen = dict(unseen or {})
        names = {bug.split("=")[0] for bug in bugs}
        if {"no_kv_cache", "non_contiguous"} <= names and program == "generate.py":
            # Without a cache every step copies what it just projected: no cache to copy
            # (docs/diagnosis.md, "one bug never implies another").
            unseen["non_contiguous"] = "no cache"
        expected = [name for name in ORDER if name in names and name not in unseen]
        batched = batched and "sequential_generation" not in names
        variants = variants or {k: v for k, v in expected_variants(bugs, batched).items() if k in expected}
        manifest.append({"file": file, "program": program, "arguments": arguments, "bugs": bugs, "expected": expected,
                         "variants": variants, "unseen": unseen, "layout": layout})
        print(f"{file}: {', '.join(expected) or 'clean'}")
        return file

    for index, (name, bugs) in enumerate(EXAMPLE_CASES):
        for shape_index, model in enumerate(("tiny", "small")):
            ranges = (index + shape_index) % 2 == 0
            arguments = ["--model", model, *WORKLOAD, *(f"--bug={bug}" for bug in bugs)]
            if ranges:
                arguments.append("--ranges")
            case(f"example-{model}-{name}", "generate.py", arguments, bugs)

    # What the trace cannot tell, and what it can only with strides.
    single = ["--model", "tiny", "--requests", "1", "--batch-size", "1", "--prompt-length", "4", "--new-tokens", "5"]
    case("example-tiny-strided-batch1", "generate.py", [*single, "--bug=non_contiguous=strided"],
         ["non_contiguous=strided"], batched=False)
    case("example-tiny-strided-batch1-no-strides", "generate.py", [*single, "--bug=non_contiguous=strided"],
         ["non_contiguous=strided"], layout="kineto-no-strides", batched=False,
         unseen={"non_contiguous": "no strides"})
    case("example-tiny-one-request-sequential", "generate.py", [*single, "--bug=sequential_generation"],
         ["sequential_generation"], unseen={"sequential_generation": "nothing to batch"})
    # A model left in fp32 is reported in a PyTorch trace (fp32_ops, variant model; docs/diagnosis.md).
    case("example-tiny-fp32-model", "generate.py", ["--model", "tiny", *WORKLOAD, "--dtype", "fp32"], ["fp32_ops=model"])
    case("example-tiny-no-strides-copy+token", "generate.py",
         ["--model", "tiny", *WORKLOAD, "--bug=non_contiguous=copy", "--bug=host_sync=token"],
         ["non_contiguous=copy", "host_sync=token"], layout="kineto-no-strides")
    # torch's legacy export (a torch built without Kineto: names and times only) cannot be made
    # with torch 2.x: those three traces were recorded once with Debian's torch 1.13 and are kept
    # as they are, with their manifest entries (KEPT_LAYOUTS).

    # The different decoder: other names, fused projections, MHA, two cache layouts.
    other = ["--requests", "2", "--batch", "2", "--prompt", "4", "--steps", "4"]
    other_cases = [
        ("fixed-prealloc", "narrow", "prealloc", [], False),
        ("fixed-concat", "wide", "concat", [], True),
        ("no_kv_cache", "narrow", "prealloc", ["no_kv_cache"], True),
        ("no_kv_cache-concat", "wide", "concat", ["no_kv_cache"], False),
        ("non_contiguous", "wide", "concat", ["non_contiguous"], False),
        ("host_sync", "narrow", "concat", ["host_sync"], True),
        ("fp32_ops", "wide", "prealloc", ["fp32_ops"], True),
        ("fp32_ops-matmuls", "narrow", "concat", ["fp32_ops=matmuls"], False),
        ("sequential", "narrow", "concat", ["sequential_generation"], False),
        ("cache+sync+fp32", "wide", "concat", ["no_kv_cache", "host_sync", "fp32_ops"], True),
        ("strided+sequential", "narrow", "prealloc", ["non_contiguous", "sequential_generation"], False),
        ("noncontig+matmuls", "narrow", "prealloc", ["non_contiguous", "fp32_ops=matmuls"], True),
    ]
    for name, shape, cache, bugs, ranges in other_cases:
        arguments = ["--shape", shape, "--cache", cache, *other, *(f"--bug={bug}" for bug in bugs)]
        if ranges:
            arguments.append("--ranges")
        # other_decoder.py's plain fp32_ops upcasts the norms and softmax only.
        spelled = ["fp32_ops=norms" if bug == "fp32_ops" else bug for bug in bugs]
        case(f"other-{shape}-{name}", "other_decoder.py", arguments, bugs,
             variants=expected_variants(spelled, "sequential_generation" not in bugs))

    # GPU-shaped, by hand from the Kineto format's documented events (gpu_shaped_trace.py).
    def gpu_case(name, source, bugs, variants, **options):
        file = f"{name}.json.gz"
        gpu_shaped_trace.make(os.path.join(args.out, source), os.path.join(args.out, file), **options)
        manifest.append({"file": file, "program": "gpu_shaped_trace.py", "arguments": [source, *options],
                         "bugs": bugs, "expected": [n for n in ORDER if n in {b.split("=")[0] for b in bugs}],
                         "variants": variants, "unseen": {}, "layout": "kineto", "gpu": True})
        print(f"{file}: GPU-shaped from {source}")

    gpu_case("gpu-tiny-fixed", "example-tiny-fixed.json.gz", [], {})
    gpu_case("gpu-tiny-host_sync-item", "example-tiny-host_sync-token.json.gz", ["host_sync=token"],
             {"host_sync": "token"})
    gpu_case("gpu-small-synchronize-per-step", "example-small-fixed.json.gz", ["host_sync=token"],
             {"host_sync": "token"}, sync_per_pass=True)
    gpu_case("gpu-tiny-cpu-per-layer", "example-tiny-fixed.json.gz", ["host_sync=layer"], {"host_sync": "layer"},
             cpu_read_per_layer=True)
    gpu_case("gpu-tiny-sequential", "example-tiny-sequential.json.gz", ["sequential_generation"], {})

    # transformers' LlamaForCausalLM and generate(), each bug as HF users make it (hf_generate.py).
    hf_workload = ["--requests", "2", "--prompt-length", "4", "--new-tokens", "4"]
    hf_cases = [
        ("fixed", [], {}),
        ("no_kv_cache", ["no_kv_cache"], {}),
        ("non_contiguous", ["non_contiguous"], {"non_contiguous": "copy"}),
        ("host_sync-token", ["host_sync=token"], {"host_sync": "token"}),
        ("host_sync-sequence", ["host_sync=sequence"], {"host_sync": "sequence"}),
        ("host_sync-layer", ["host_sync=layer"], {"host_sync": "layer"}),
        ("fp32_ops-model", ["fp32_ops=model"], {"fp32_ops": "model"}),
        ("fp32_ops-norms", ["fp32_ops=norms"], {"fp32_ops": "norms"}),
        ("sequential", ["sequential_generation"], {}),
        ("cache+token", ["no_kv_cache", "host_sync=token"], {"host_sync": "token"}),
        ("copy+norms+sequence", ["non_contiguous", "fp32_ops=norms", "host_sync=sequence"],
         {"non_contiguous": "copy", "fp32_ops": "norms", "host_sync": "sequence"}),
        ("layer+sequential", ["host_sync=layer", "sequential_generation"], {"host_sync": "layer"}),
        ("cache+model+sequential", ["no_kv_cache", "fp32_ops=model", "sequential_generation"], {"fp32_ops": "model"}),
    ]
    for name, bugs, variants in hf_cases:
        case(f"hf-{name}", "hf_generate.py", [*hf_workload, *(f"--bug={bug}" for bug in bugs)], bugs,
             variants=variants, layout="hf")
    case("hf-one-request", "hf_generate.py", ["--requests", "1", "--prompt-length", "4", "--new-tokens", "4"], [],
         layout="hf")

    for entry in kept:
        manifest.append(entry)
    with open(os.path.join(args.out, "manifest.json"), "w") as out:
        json.dump({"generated_by": "examples/pytorch/make_test_traces.py", "cases": manifest}, out, indent=1)
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
