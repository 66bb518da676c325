"""Turns a CPU torch.profiler trace of the example into a GPU-shaped one, by hand, from the
events the Kineto format documents — to test the host-sync signals of a GPU trace on a
machine without a GPU. No torch needed; used by make_test_traces.py.

What it adds to the recorded CPU ops (whose names, shapes and order it keeps):
  - per compute op a `cuda_runtime` cudaLaunchKernel inside it, the `kernel` it launched on
    stream 7 (`correlation` and `External id` in both) and the `ac2g` flow arrow between them;
  - per aten::_local_scalar_dense (a .item()) a cudaMemcpyAsync, its `gpu_memcpy`
    "Memcpy DtoH (Device -> Pageable)" and a cudaStreamSynchronize;
  - on request, extra reads: a torch.cuda.synchronize() (a top-level cudaDeviceSynchronize)
    before every pass but the first, or a `.cpu()` (aten::to → aten::_to_copy → aten::copy_
    with a DtoH memcpy and a sync) after each attention;
  - a prompt upload (aten::to with a "Memcpy HtoD (Pageable -> Device)") before each request
    group's prefill, and a `deviceProperties` entry.
Then the device runs: kernels in launch order, each as long as its kind takes; a sync holds
the host until the device is done, and everything the host did later moves later by that wait.
"""

from __future__ import annotations

import bisect
import gzip
import json

VIEW_OPS = {"aten::view", "aten::reshape", "aten::_reshape_alias", "aten::as_strided", "aten::slice", "aten::select",
            "aten::transpose", "aten::t", "aten::permute", "aten::expand", "aten::unsqueeze", "aten::narrow",
            "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::_unsafe_view", "aten::resolve_conj",
            "aten::resolve_neg", "aten::detach", "aten::detach_", "aten::lift_fresh", "aten::result_type",
            "aten::item", "aten::_local_scalar_dense", "aten::to", "aten::_to_copy", "aten::contiguous",
            "aten::is_nonzero", "aten::unbind", "aten::split", "aten::chunk", "aten::unflatten", "aten::flatten",
            "aten::resize_", "aten::zeros", "aten::alias", "aten::split_with_sizes", "aten::matmul", "aten::linear"}
DEVICE_PID, STREAM = 0, 7
SYNC_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize")


def kernel_for(name: str) -> tuple[str, float]:
    """A kernel name and a duration (µs) of the kind a GPU runs for this op."""
    if name in ("aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm"):
        return "ampere_bf16_s16816gemm_bf16_64x64_sliced1x2_ldg8_f2f_tn", 14.0
    if name in ("aten::_softmax", "aten::softmax"):
        return "void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 4, false>", 4.0
    if name in ("aten::sum", "aten::mean", "aten::argmax", "aten::max", "aten::amax"):
        return "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float>>>", 5.0
    return "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float>>", 3.0


def dims_of(event: dict) -> list:
    return event.get("args", {}).get("Input Dims", [])


class Shaper:
    def __init__(self, document: dict):
        self.document = document
        events = document["traceEvents"]
        self.meta = [e for e in events if e.get("ph") != "X"]
        self.host = sorted((dict(e) for e in events if e.get("ph") == "X"), key=lambda e: (e["ts"], -e["dur"]))
        # The model's thread: torch 2.x's export begins with a "PyTorch Profiler" span on its own
        # pseudo-thread ("Spans"), so take the first cpu_op's.
        first_op = next(e for e in self.host if e.get("cat") == "cpu_op")
        self.pid, self.tid = first_op["pid"], first_op["tid"]
        self.correlation = 10_000_000
        self.inserts: list[tuple[float, float, list]] = []  # (before this original time, length, block events)
        self.work: list[dict] = []                            # what the device runs, with the call that asked

    def next_id(self) -> int:
        self.correlation += 1
        return self.correlation

    def call(self, name: str, ts: float, dur: float, external: int) -> dict:
        return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": self.pid, "tid": self.tid, "ts": ts,
                "dur": dur, "args": {"External id": external, "correlation": self.next_id()}}

    def device(self, kind: str, name: str, duration: float, call: dict, **args) -> None:
        self.work.append({"kind": kind, "name": name, "duration": duration, "call": call, **args})

    def memcpy(self, ts: float, span: float, external: int, direction: str, synchronize: bool) -> list:
        copy = self.call("cudaMemcpyAsync", ts, 0.3 * span, external)
        name = "Memcpy DtoH (Device -> Pageable)" if direction == "DtoH" else "Memcpy HtoD (Pageable -> Device)"
        self.device("gpu_memcpy", name, 1.5, copy, bytes=8 if direction == "DtoH" else 64)
        added = [copy]
        if synchronize:
            added.append(self.call("cudaStreamSynchronize", ts + 0.4 * span, 0.5 * span, external))
        return added

    def cpu_op(self, name: str, ts: float, dur: float, dims: list, types: list) -> dict:
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": self.pid, "tid": self.tid, "ts": ts, "dur": dur,
                "args": {"External id": self.next_id(), "Input Dims": dims, "Input type": types}}

    def insert_before(self, at: float, length: float, events: list) -> None:
        """A block of host events, times relative to its start, placed before original time `at`."""
        self.inserts.append((at, length, events))

    def shape(self, sync_per_pass: bool = False, cpu_read_per_layer: bool = False) -> dict:
        added: list[dict] = []
        ops_open: list[dict] = []
        embeddings, attention_matmuls = [], 0
        for op in self.host:
            while ops_open and op["ts"] >= ops_open[-1]["ts"] + ops_open[-1]["dur"]:
                ops_open.pop()
            if op.get("cat") != "cpu_op":
                continue
            top_level = not ops_open
            ops_open.append(op)
            name = op["name"]
            if name == "aten::embedding" and top_level:
                embeddings.append(op)
            if name == "aten::_local_scalar_dense":
                added += self.memcpy(op["ts"] + 0.1 * op["dur"], 0.8 * op["dur"], op["args"].get("External id", 0),
                                     "DtoH", synchronize=True)
            elif name not in VIEW_OPS and not self.has_op_inside(op):
                kernel, duration = kernel_for(name)
                launch = self.call("cudaLaunchKernel", op["ts"] + 0.85 * op["dur"], 0.1 * op["dur"],
                                   op["args"].get("External id", 0))
                added.append(launch)
                self.device("kernel", kernel, duration, launch)
            if name == "aten::matmul" and top_level and len(dims_of(op)) == 2 and all(len(d) >= 3 for d in dims_of(op)):
                attention_matmuls += 1
                if cpu_read_per_layer and attention_matmuls % 2 == 0:  # after each attention
                    self.dot_cpu(self.next_begin(op), dims_of(op)[0][:-1] + [dims_of(op)[1][-1]])
        for index, embedding in enumerate(embeddings):
            if sync_per_pass and index > 0:
                self.insert_before(self.pass_begin(embedding), 4.0, [self.call("cudaDeviceSynchronize", 1.0, 2.0, 0)])
            if len(dims_of(embedding)) > 1 and len(dims_of(embedding)[1]) == 2 and dims_of(embedding)[1][1] > 1:
                self.upload(self.pass_begin(embedding), dims_of(embedding)[1])
        self.host += added
        return self.run_device()

    def has_op_inside(self, op: dict) -> bool:
        end = op["ts"] + op["dur"]
        first = bisect.bisect_left(self.host, (op["ts"], -op["dur"]), key=lambda e: (e["ts"], -e["dur"])) + 1
        for other in self.host[first:]:
            if other["ts"] >= end:
                return False
            if other.get("cat") == "cpu_op" and other["name"] not in VIEW_OPS:
                return True
        return False

    def next_begin(self, op: dict) -> float:
        """The begin of the first host event after `op` ends: where a block can go."""
        end = op["ts"] + op["dur"]
        return min((e["ts"] for e in self.host if e["ts"] >= end), default=end)

    def pass_begin(self, embedding: dict) -> float:
        """Before the embedding and before any range that opens its pass."""
        begin = embedding["ts"]
        for event in self.host:
            if event.get("cat") == "user_annotation" and event["ts"] <= begin <= event["ts"] + event["dur"] and \
                    event["ts"] > begin - 50 and not event["name"].startswith("ProfilerStep"):
                begin = min(begin, event["ts"])
        return begin

    def dot_cpu(self, at: float, dims: list) -> None:
        """A `.cpu()` of an activation: aten::to → aten::_to_copy → aten::copy_, a DtoH copy and a sync."""
        dtype = "c10::BFloat16"
        to = self.cpu_op("aten::to", 0.0, 10.0, [dims, [], [], [], []], [dtype, "", "Scalar", "Scalar", ""])
        to_copy = self.cpu_op("aten::_to_copy", 0.5, 9.0, [dims, [], [], [], [], [], []], [dtype, "", "", "", "", "Scalar", ""])
        copy = self.cpu_op("aten::copy_", 1.0, 8.0, [dims, dims, []], [dtype, dtype, "Scalar"])
        self.insert_before(at, 11.0, [to, to_copy, copy] + self.memcpy(1.5, 7.0, copy["args"]["External id"], "DtoH", True))

    def upload(self, at: float, dims: list) -> None:
        to = self.cpu_op("aten::to", 0.0, 8.0, [dims, [], [], [], []], ["long int", "", "Scalar", "Scalar", ""])
        self.insert_before(at, 9.0, [to] + self.memcpy(1.0, 6.0, to["args"]["External id"], "HtoD", False))

    def run_device(self) -> dict:
        # 1. Make room for the inserted blocks: what begins at or after a block's place moves
        #    by its length; what encloses the place grows.
        inserts = sorted(self.inserts, key=lambda i: i[0])
        anchors = [at for at, _, _ in inserts]
        lengths = [0.0]
        for _, length, _ in inserts:
            lengths.append(lengths[-1] + length)

        def room(t: float, end: bool) -> float:
            return t + lengths[(bisect.bisect_left if end else bisect.bisect_right)(anchors, t)]

        for event in self.host:
            begin, end = event["ts"], event["ts"] + event["dur"]
            event["ts"], event["dur"] = room(begin, False), room(end, True) - room(begin, False)
        for index, (at, _, block) in enumerate(inserts):
            start = at + lengths[index]
            for event in block:
                event["ts"] += start
            self.host += block

        # 2. The device: work in launch order; each sync waits for the work launched before it.
        syncs = sorted((e for e in self.host if e.get("name") in SYNC_CALLS), key=lambda e: e["ts"])
        points, waits = [], []  # sync midpoints and the wait each one adds
        cursor, shift, next_sync = 0.0, 0.0, 0
        for item in sorted(self.work, key=lambda w: w["call"]["ts"]) + [None]:
            launch = item["call"]["ts"] if item else float("inf")
            while next_sync < len(syncs) and syncs[next_sync]["ts"] < launch:
                sync = syncs[next_sync]
                middle = sync["ts"] + sync["dur"] / 2
                wait = max(0.0, cursor - (middle + shift))
                points.append(middle)
                waits.append(wait)
                shift += wait
                next_sync += 1
            if item is None:
                break
            item["start"] = max(launch + shift + 4.0, cursor)
            cursor = item["end"] = item["start"] + item["duration"]
        totals = [0.0]
        for wait in waits:
            totals.append(totals[-1] + wait)

        def later(t: float) -> float:
            return t + totals[bisect.bisect_left(points, t)]

        events = []
        for event in self.host:
            begin, end = later(event["ts"]), later(event["ts"] + event["dur"])
            events.append({**event, "ts": round(begin, 3), "dur": round(end - begin, 3)})
        for item in self.work:
            call = item["call"]
            args = {"External id": call["args"]["External id"], "device": 0, "context": 1, "stream": STREAM,
                    "correlation": call["args"]["correlation"]}
            if item["kind"] == "kernel":
                args.update({"queued": 0, "registers per thread": 64, "shared memory": 16384, "blocks per SM": 0.5,
                             "warps per SM": 2.0, "grid": [32, 1, 1], "block": [128, 1, 1],
                             "est. achieved occupancy %": 6})
            else:
                args["bytes"] = item["bytes"]
            events.append({"ph": "X", "cat": item["kind"], "name": item["name"], "pid": DEVICE_PID, "tid": STREAM,
                           "ts": round(item["start"], 3), "dur": round(item["duration"], 3), "args": args})
            events.append({"ph": "s", "id": args["correlation"], "pid": self.pid, "tid": self.tid,
                           "ts": round(later(call["ts"]), 3), "cat": "ac2g", "name": "ac2g"})
            events.append({"ph": "f", "id": args["correlation"], "pid": DEVICE_PID, "tid": STREAM,
                           "ts": round(item["start"], 3), "cat": "ac2g", "name": "ac2g", "bp": "e"})
        events.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        meta = self.meta + [
            {"name": "process_name", "ph": "M", "ts": 0, "pid": DEVICE_PID, "tid": 0, "args": {"name": "GPU 0"}},
            {"name": "thread_name", "ph": "M", "ts": 0, "pid": DEVICE_PID, "tid": STREAM, "args": {"name": "stream 7"}}]
        document = dict(self.document)
        document["deviceProperties"] = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85031714816,
                                         "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024,
                                         "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
                                         "sharedMemPerBlock": 49152, "numSms": 132}]
        document["traceEvents"] = meta + events
        document["traceName"] = "GPU-shaped by examples/pytorch/gpu_shaped_trace.py"
        return document


def make(source: str, target: str, **options) -> None:
    with gzip.open(source, "rt") as f:
        document = json.load(f)
    shaped = Shaper(document).shape(**options)
    with gzip.open(target, "wt") as out:
        json.dump(shaped, out, separators=(",", ":"))
