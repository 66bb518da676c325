"""Writes a torch.profiler run as a Chrome trace that `decodelab diagnose` (and Perfetto) reads.

Where torch was built with Kineto, its own `export_chrome_trace()` writes the Kineto JSON
(`traceEvents` of `cpu_op`, `user_annotation`, and on a GPU `cuda_runtime`, `kernel`,
`gpu_memcpy`, with `Input Dims`, `Input type` and, from torch 2.1, `Input Strides`).
Debian's torch 1.13 is built without Kineto: its export then falls back to the legacy writer,
which drops every shape and dtype. The profiler still recorded them (record_shapes=True), so
this module writes the same Kineto layout from the recorded events — one `cpu_op` or
`user_annotation` event per op, with the args Kineto would write.

The one non-obvious choice: the events come from the profiler's event tree
(`experimental_event_tree()`), the only place torch 1.13 keeps the strides of each input and
nanosecond times; a future torch that renames it falls back to torch's own export.
"""

from __future__ import annotations

import gzip
import json
import os

import torch

LAYOUTS = ("auto", "torch-export", "kineto", "kineto-no-strides")


def profiler_activities(device: str) -> list:
    activities = [torch.profiler.ProfilerActivity.CPU]
    if str(device).startswith("cuda"):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    return activities


def kineto_available() -> bool:
    return bool(getattr(torch.autograd, "kineto_available", lambda: False)())


def write_trace(profile, path: str, layout: str = "auto") -> str:
    """Writes the trace of a finished torch.profiler.profile; returns the layout written."""
    if layout == "auto":
        layout = "torch-export" if kineto_available() else "kineto"
    if layout != "torch-export":
        try:
            document = kineto_document(profile, with_strides=layout == "kineto")
        except AttributeError as error:  # the event tree's API changed: torch's own writer
            print(f"torch_trace_writer: cannot read the profiler's event tree ({error}); using export_chrome_trace()")
            layout = "torch-export"
    if layout == "torch-export":
        profile.export_chrome_trace(path)
        return layout if kineto_available() else "torch-export (legacy: no shapes)"
    text = json.dumps(document, separators=(",", ":"))
    opener = gzip.open if path.endswith(".gz") else open
    temporary = path + ".partial"
    with opener(temporary, "wt") as out:
        out.write(text)
    os.replace(temporary, path)
    return layout


def kineto_document(profile, with_strides: bool) -> dict:
    result = profile.profiler.kineto_results
    roots = result.experimental_event_tree()
    user_scope = torch._C._profiler.RecordScope.USER_SCOPE
    nodes = []
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(reversed(node.children))
    base_ns = min((node.start_time_ns for node in nodes), default=0)
    pid = os.getpid()

    events = []
    threads = set()
    for node in nodes:
        fields = node.extra_fields
        if type(fields).__name__ != "_ExtraFields_TorchOp":
            continue  # allocations, Python frames: not op events
        start = node.start_time_ns - base_ns
        duration = max(0, node.end_time_ns - node.start_time_ns)
        annotation = fields.scope == user_scope
        args = {"External id": node.correlation_id}
        if not annotation:
            inputs = fields.inputs
            args["Input Dims"] = [list(shape) for shape in inputs.shapes]
            args["Input type"] = list(inputs.dtypes)
            if with_strides:
                args["Input Strides"] = [list(stride) for stride in inputs.strides]
            if fields.sequence_number >= 0:
                args["Sequence number"] = fields.sequence_number
        events.append({"ph": "X", "cat": "user_annotation" if annotation else "cpu_op", "name": node.name,
                       "pid": pid, "tid": node.start_tid, "ts": round(start / 1000, 3), "dur": round(duration / 1000, 3),
                       "args": args})
        threads.add(node.start_tid)
    events.sort(key=lambda event: (event["ts"], -event["dur"]))
    metadata = [{"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "python3"}}]
    metadata += [{"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": {"name": f"thread {tid}"}}
                 for tid in sorted(threads)]
    return {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms", "baseTimeNanoseconds": base_ns,
            "traceEvents": metadata + events, "traceName": "torch.profiler (written by torch_trace_writer.py, torch "
            + torch.__version__ + ")"}
