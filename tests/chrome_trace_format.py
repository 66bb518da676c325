#!/usr/bin/env python3
"""ctest chrome_trace_format: the Chrome traces `decodelab run --trace` and `compare --trace`
write, checked against the Trace Event Format itself rather than decodelab's own reader.

Usage: chrome_trace_format.py DECODELAB OUT_DIR   (or: chrome_trace_format.py --check TRACE...)

The format's rules checked here: a JSON object (strict JSON: no NaN, no duplicate keys) with a
"traceEvents" list; each event's phase known and its required fields present with the right
types (X: name, ts, dur >= 0, pid, tid; B/E: ts, pid, tid; M: a known metadata name and its
args; s/f flow events: name, cat, id, ts, pid, tid); complete (X) slices of one thread nest
(a viewer cannot draw two that overlap partly); every flow has one start and one end, in time
order, and an end bound to its enclosing slice ("bp": "e") lies inside a slice of its thread.
Then what the issue asked of decodelab's layout: every closed step and layer range of the
host track also sits on the device track, spanning device slices only, steps in order.
Last, copies of a trace broken in each of those ways must fail the check (it can fail).
"""
import json
import math
import subprocess
import sys
from collections import defaultdict

EPSILON_US = 1e-3  # timestamps are µs with ns resolution
METADATA_ARGS = {"process_name": "name", "process_labels": "labels", "process_sort_index": "sort_index",
                 "thread_name": "name", "thread_sort_index": "sort_index"}
PHASES = set("XBEMsftiIbenCPOND")


class FormatError(Exception):
    pass


def strict_load(path):
    def no_duplicates(pairs):
        keys = [key for key, _ in pairs]
        if len(keys) != len(set(keys)):
            raise FormatError(f"{path}: an object repeats a key: {keys}")
        return dict(pairs)

    def no_constants(name):
        raise FormatError(f"{path}: {name} is not JSON")

    with open(path, encoding="utf-8") as stream:
        return json.load(stream, object_pairs_hook=no_duplicates, parse_constant=no_constants)


def require(event, where, key, kinds):
    if key not in event:
        raise FormatError(f"{where}: required field '{key}' missing (ph {event.get('ph')!r})")
    value = event[key]
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise FormatError(f"{where}.{key}: expected {kinds}, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise FormatError(f"{where}.{key}: not a finite number")
    return value


def check_event(event, where):
    if not isinstance(event, dict):
        raise FormatError(f"{where}: an event must be an object")
    phase = require(event, where, "ph", str)
    if phase not in PHASES:
        raise FormatError(f"{where}.ph: unknown phase {phase!r}")
    number = (int, float)
    if "args" in event and not isinstance(event["args"], dict):
        raise FormatError(f"{where}.args: expected an object")
    if "cat" in event:
        require(event, where, "cat", str)
    if phase == "M":
        name = require(event, where, "name", str)
        if name not in METADATA_ARGS:
            raise FormatError(f"{where}.name: unknown metadata event {name!r}")
        require(event, where, "pid", int)
        if name.startswith("thread_"):
            require(event, where, "tid", int)
        if METADATA_ARGS[name] not in event.get("args", {}):
            raise FormatError(f"{where}.args: {name} needs '{METADATA_ARGS[name]}'")
        return
    require(event, where, "ts", number)
    require(event, where, "pid", int)
    require(event, where, "tid", int)
    if phase in "XB":
        require(event, where, "name", str)
    if phase == "X" and require(event, where, "dur", number) < 0:
        raise FormatError(f"{where}.dur: negative")
    if phase in "stf":
        require(event, where, "name", str)
        require(event, where, "cat", str)
        require(event, where, "id", (int, str))
        if phase == "f" and event.get("bp", "e") != "e":
            raise FormatError(f"{where}.bp: the only binding point is 'e'")


def check_nesting(slices, track):
    """X slices of one thread, sorted (begin, longer first): each inside the one below it."""
    stack = []
    for begin, end, where in sorted(slices, key=lambda s: (s[0], -(s[1] - s[0]))):
        while stack and begin >= stack[-1][1] - EPSILON_US:
            stack.pop()
        if stack and end > stack[-1][1] + EPSILON_US:
            raise FormatError(f"{where} [{begin}, {end}] overlaps {stack[-1][2]} [{stack[-1][0]}, {stack[-1][1]}] "
                              f"on {track} without nesting in it")
        stack.append((begin, end, where))


def check_trace(path):
    root = strict_load(path)
    if not isinstance(root, dict) or not isinstance(root.get("traceEvents"), list):
        raise FormatError(f"{path}: expected an object with a 'traceEvents' list")
    if root.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        raise FormatError(f"{path}: displayTimeUnit must be 'ms' or 'ns'")
    slices = defaultdict(list)
    flows = defaultdict(list)
    track_names = {}
    for index, event in enumerate(root["traceEvents"]):
        where = f"{path}: traceEvents[{index}]"
        check_event(event, where)
        phase = event["ph"]
        if phase == "M" and event["name"] == "thread_name":
            track_names[(event["pid"], event["tid"])] = event["args"]["name"]
        if phase == "X":
            slices[(event["pid"], event["tid"])].append((event["ts"], event["ts"] + event["dur"], where, event))
        if phase in "sf":
            flows[(event["cat"], event["id"])].append(event)
    for track, track_slices in slices.items():
        check_nesting([(b, e, w) for b, e, w, _ in track_slices], track_names.get(track, str(track)))
    for key, events in flows.items():
        phases = sorted(event["ph"] for event in events)
        if phases != ["f", "s"]:
            raise FormatError(f"{path}: flow {key} has phases {phases}, expected one 's' and one 'f'")
        start = next(e for e in events if e["ph"] == "s")
        end = next(e for e in events if e["ph"] == "f")
        if end["ts"] < start["ts"] - EPSILON_US:
            raise FormatError(f"{path}: flow {key} ends before it starts")
        bound = [s for s in slices[(end["pid"], end["tid"])] if s[0] - EPSILON_US <= end["ts"] <= s[1] + EPSILON_US]
        if not bound:
            raise FormatError(f"{path}: flow {key} ends at {end['ts']} µs outside every slice of its thread")
    check_device_ranges(path, root, slices, track_names)
    return len(root["traceEvents"])


def check_device_ranges(path, root, slices, track_names):
    tracks = {name: track for track, name in track_names.items()}
    if "host" not in tracks or "device stream" not in tracks:
        raise FormatError(f"{path}: expected the tracks 'host' and 'device stream', got {sorted(tracks)}")
    host = [e for *_, e in slices[tracks["host"]] if e.get("cat") == "range"]
    device = [e for *_, e in slices[tracks["device stream"]] if e.get("cat") == "device_range"]
    device_ops = [e for *_, e in slices[tracks["device stream"]] if e.get("cat") != "device_range"]
    device_names = [e["name"] for e in device]
    steps = [e for e in host if e["args"]["kind"] in ("step", "layer")]
    if not any(e["args"]["kind"] == "step" for e in steps):
        raise FormatError(f"{path}: no step range on the host track to check")
    for event in steps:
        if device_names.count(event["name"]) < 1:
            raise FormatError(f"{path}: host range '{event['name']}' has no counterpart on the device track")
    for event in device:
        begin, end = event["ts"], event["ts"] + event["dur"]
        inside = [op for op in device_ops
                  if op["ts"] >= begin - EPSILON_US and op["ts"] + op["dur"] <= end + EPSILON_US]
        if not inside or abs(min(op["ts"] for op in inside) - begin) > EPSILON_US or \
                abs(max(op["ts"] + op["dur"] for op in inside) - end) > EPSILON_US:
            raise FormatError(f"{path}: device range '{event['name']}' does not run from its first to its last op")
    device_steps = [e for e in device if e["args"]["kind"] == "step"]
    for before, after in zip(device_steps, device_steps[1:]):
        if after["ts"] < before["ts"] + before["dur"] - EPSILON_US:
            raise FormatError(f"{path}: device steps '{before['name']}' and '{after['name']}' overlap")


def check_rejects_broken(trace, out):
    """The checker must fail on a trace broken in each way it claims to catch."""
    with open(trace, encoding="utf-8") as stream:
        original = json.load(stream)
    events = original["traceEvents"]

    def first(predicate):
        return next(i for i, event in enumerate(events) if predicate(event))

    device_range = first(lambda e: e.get("cat") == "device_range" and e["args"]["kind"] == "step")
    breakages = {
        "an X slice without dur": lambda doc: doc["traceEvents"][first(lambda e: e["ph"] == "X")].pop("dur"),
        "a device step cut short": lambda doc: doc["traceEvents"][device_range].update(
            dur=doc["traceEvents"][device_range]["dur"] / 2),
        "a flow without its end": lambda doc: doc["traceEvents"].pop(first(lambda e: e["ph"] == "f")),
        "a device step gone": lambda doc: doc["traceEvents"].pop(device_range),
        "NaN as a timestamp": lambda doc: doc["traceEvents"][device_range].update(ts=float("nan")),
    }
    for what, breakage in breakages.items():
        broken = json.loads(json.dumps(original))
        breakage(broken)
        path = f"{out}/format_broken.trace.json"
        with open(path, "w", encoding="utf-8") as stream:
            json.dump(broken, stream)
        try:
            check_trace(path)
        except FormatError:
            continue
        sys.exit(f"chrome_trace_format: the check passed a trace with {what}")
    print(f"chrome_trace_format: rejects each of {len(breakages)} broken copies of {trace}")


def main(argv):
    if len(argv) >= 2 and argv[0] == "--check":
        traces = argv[1:]
    elif len(argv) == 2:
        decodelab, out = argv
        common = ["--backend", "cpu", "--threads", "1", "--set", "run={warmup: 0, repeats: 1}",
                  "--set", "workload={requests: 2, batch_size: 2, prompt_tokens: 4, new_tokens: 4}", "--quiet"]
        subprocess.run([decodelab, "run", "quickstart", "--trace", f"{out}/format_run.trace.json"] + common,
                       check=True)
        subprocess.run([decodelab, "compare", "bugs/host_sync", "--set", "model=lab-tiny", "--trace",
                        f"{out}/format_"] + common, check=True)
        traces = [f"{out}/format_run.trace.json", f"{out}/format_fixed.trace.json", f"{out}/format_buggy.trace.json"]
    else:
        sys.exit(__doc__)
    for trace in traces:
        try:
            events = check_trace(trace)
        except FormatError as error:
            sys.exit(f"chrome_trace_format: {error}")
        print(f"chrome_trace_format: {trace}: {events} events follow the Trace Event Format")
    if argv[0] != "--check":
        check_rejects_broken(traces[-1], out)


if __name__ == "__main__":
    main(sys.argv[1:])
