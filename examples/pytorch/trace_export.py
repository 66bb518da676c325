"""Records a torch.profiler run the way a PyTorch user does, and writes it with torch's own
`export_chrome_trace()` (torch 2.x, Kineto: `cpu_op`, `user_annotation`, on a GPU
`cuda_runtime`, `kernel`, `gpu_memcpy`, with `Input Dims`, `Input type`, `Input Strides`).

One non-obvious choice: the `kineto-no-strides` layout is torch's export with `Input Strides`
removed afterwards — what torch 2.0 and older write — so that the diagnosis's no-strides path
is tested on a trace of the same program.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile

import torch

LAYOUTS = ("kineto", "kineto-no-strides")


def profiler_activities(device: str) -> list:
    activities = [torch.profiler.ProfilerActivity.CPU]
    if str(device).startswith("cuda"):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return activities


def write_trace(profile, path: str, layout: str = "kineto") -> str:
    """Writes the trace of a finished torch.profiler.profile; returns the layout written."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown trace layout {layout!r} (expected one of {', '.join(LAYOUTS)})")
    if layout == "kineto":
        profile.export_chrome_trace(path)
        return layout
    with tempfile.TemporaryDirectory() as folder:
        exported = os.path.join(folder, "trace.json")
        profile.export_chrome_trace(exported)
        with open(exported) as file:
            trace = json.load(file)
    for event in trace.get("traceEvents", []):
        event.get("args", {}).pop("Input Strides", None)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wt") as out:
        json.dump(trace, out)
    return layout
