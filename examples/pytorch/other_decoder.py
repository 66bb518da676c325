#!/usr/bin/env python3
"""A second, different small decoder for checking that `decodelab diagnose` keys on what
torch.profiler records, not on the course example's code: other module names, plain weight
matrices used with `@` instead of nn.Linear, fused QKV and gate/up projections,
multi-head attention without query groups, an interleaved rotary embedding, a norm written
with sqrt and a division, sampling with torch.max, and two cache layouts — a preallocated
buffer written with index_copy_ and read with narrow, or a cache grown with torch.cat.

    python3 examples/pytorch/other_decoder.py --cache concat --bug host_sync --trace t.json

Bugs: no_kv_cache (a fresh cache for every call on the whole sequence), non_contiguous (the
cache kept position-major and read through a permuted view: torch.matmul copies it, or at
batch 1 reads it strided), host_sync (int() of a device scalar every step), fp32_ops (norm and
softmax upcast with .float()/.type_as; with =matmuls the weights cast to fp32 on every call),
sequential_generation. --ranges adds record_function ranges named unlike the example's.
"""

from __future__ import annotations

import argparse
import math
import sys

import torch
import torch.nn.functional as F
from torch import nn

from trace_export import LAYOUTS, profiler_activities, write_trace

SHAPES = {  # vocab, width, depth, heads, ffn
    "narrow": (200, 48, 2, 3, 96),
    "wide": (320, 80, 3, 5, 160),
}
BUGS = ("no_kv_cache", "non_contiguous", "host_sync", "fp32_ops", "fp32_ops=matmuls", "sequential_generation")


class Cache:
    """K and V per block: `prealloc` keeps [batch, heads, capacity, head] buffers, `concat`
    grows [batch, heads, n, head] tensors with torch.cat. With `position_major` (the
    non_contiguous bug) both keep positions before heads."""

    def __init__(self, kind: str, blocks: int, batch: int, heads: int, head: int, capacity: int, dtype,
                 position_major: bool):
        self.kind, self.position_major = kind, position_major
        self.axis = 1 if position_major else 2
        shape = [batch, heads, capacity if kind == "prealloc" else 0, head]
        if position_major:
            shape[1], shape[2] = shape[2], shape[1]
        self.k = [torch.zeros(shape, dtype=dtype) for _ in range(blocks)]
        self.v = [torch.zeros(shape, dtype=dtype) for _ in range(blocks)]

    def append(self, block: int, offset: int, k: torch.Tensor, v: torch.Tensor):
        """k, v: [batch, heads, n, head]; returns all keys and values so far, [batch, heads, n, head]."""
        if self.position_major:
            k, v = k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3)
        n = k.shape[self.axis]
        if self.kind == "prealloc":
            where = torch.arange(offset, offset + n)
            self.k[block].index_copy_(self.axis, where, k)
            self.v[block].index_copy_(self.axis, where, v)
            keys, values = self.k[block].narrow(self.axis, 0, offset + n), self.v[block].narrow(self.axis, 0, offset + n)
        else:
            self.k[block] = torch.cat([self.k[block], k], dim=self.axis)
            self.v[block] = torch.cat([self.v[block], v], dim=self.axis)
            keys, values = self.k[block], self.v[block]
        if self.position_major:
            keys, values = keys.permute(0, 2, 1, 3), values.permute(0, 2, 1, 3)
        return keys, values


def interleaved_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [batch, heads, n, head]; pairs (0,1), (2,3), ... rotate together."""
    pairs = x.unflatten(-1, (-1, 2))
    even, odd = pairs[..., 0], pairs[..., 1]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class ScaleNorm(nn.Module):
    def __init__(self, width: int, upcast: bool):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(width))
        self.upcast = upcast

    def forward(self, x):
        y = x.to(torch.float32) if self.upcast else x
        y = y / torch.sqrt((y * y).mean(dim=-1, keepdim=True) + 1e-6)
        return y.type_as(x) * self.gain


class SelfAttention(nn.Module):
    def __init__(self, width: int, heads: int, upcast: bool, fp32_weights: bool):
        super().__init__()
        self.heads, self.head = heads, width // heads
        self.wqkv = nn.Parameter(torch.randn(width, 3 * width) / math.sqrt(width))
        self.wo = nn.Parameter(torch.randn(width, width) / math.sqrt(width))
        self.upcast, self.fp32_weights = upcast, fp32_weights

    def project(self, x, weight):
        if self.fp32_weights:  # the weights converted on every call: fp32 matmuls
            return (x.float() @ weight.float()).type_as(x)
        return x @ weight

    def forward(self, x, block: int, cache: Cache, offset: int, cos, sin):
        b, n, _ = x.shape
        q, k, v = self.project(x, self.wqkv).split(self.heads * self.head, dim=-1)
        q, k, v = (t.unflatten(-1, (self.heads, self.head)).transpose(1, 2) for t in (q, k, v))
        q, k = interleaved_rotary(q, cos, sin), interleaved_rotary(k, cos, sin)
        keys, values = cache.append(block, offset, k, v)
        att = torch.matmul(q, keys.transpose(2, 3)) * self.head ** -0.5
        if n > 1:
            visible = torch.arange(keys.shape[2])[None, :] <= (offset + torch.arange(n))[:, None]
            att = att.masked_fill(~visible, float("-inf"))
        att = torch.softmax(att.float(), dim=-1).type_as(v) if self.upcast else torch.softmax(att, dim=-1)
        y = torch.matmul(att, values).transpose(1, 2).flatten(2)
        return self.project(y, self.wo)


class FeedForward(nn.Module):
    def __init__(self, width: int, ffn: int, fp32_weights: bool):
        super().__init__()
        self.w13 = nn.Parameter(torch.randn(width, 2 * ffn) / math.sqrt(width))
        self.w2 = nn.Parameter(torch.randn(ffn, width) / math.sqrt(ffn))
        self.fp32_weights = fp32_weights

    def forward(self, x):
        if self.fp32_weights:
            gate, up = (x.float() @ self.w13.float()).chunk(2, dim=-1)
            return ((F.silu(gate) * up) @ self.w2.float()).type_as(x)
        gate, up = (x @ self.w13).chunk(2, dim=-1)
        return (F.silu(gate) * up) @ self.w2


class Block(nn.Module):
    def __init__(self, width, heads, ffn, upcast, fp32_weights):
        super().__init__()
        self.pre_attn, self.pre_ffn = ScaleNorm(width, upcast), ScaleNorm(width, upcast)
        self.attn = SelfAttention(width, heads, upcast, fp32_weights)
        self.ffn = FeedForward(width, ffn, fp32_weights)

    def forward(self, x, index, cache, offset, cos, sin):
        x = x + self.attn(self.pre_attn(x), index, cache, offset, cos, sin)
        return x + self.ffn(self.pre_ffn(x))


class TinyLM(nn.Module):
    def __init__(self, shape: str, upcast: bool, fp32_weights: bool):
        super().__init__()
        vocab, width, depth, heads, ffn = SHAPES[shape]
        self.wte = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(Block(width, heads, ffn, upcast, fp32_weights) for _ in range(depth))
        self.ln_f = ScaleNorm(width, upcast)
        self.unembed = nn.Parameter(torch.randn(width, vocab) / math.sqrt(width))
        head = width // heads
        self.inv_freq = 1.0 / (10000 ** (torch.arange(0, head, 2).float() / head))

    def forward(self, ids, cache: Cache, offset: int):
        n = ids.shape[1]
        angles = torch.outer(torch.arange(offset, offset + n).float(), self.inv_freq).to(self.unembed.dtype)
        cos, sin = angles.cos(), angles.sin()
        x = F.embedding(ids, self.wte.weight)
        for index, block in enumerate(self.blocks):
            x = block(x, index, cache, offset, cos, sin)
        return self.ln_f(x[:, -1]) @ self.unembed


def run(model: TinyLM, prompts, steps: int, batch: int, bugs: set, cache_kind: str, ranges: bool):
    if "sequential_generation" in bugs:
        batch = 1
    vocab, width, depth, heads, _ = model.shape
    finished = []
    for first in range(0, prompts.shape[0], batch):
        ids = prompts[first:first + batch]
        with (torch.profiler.record_function("gen") if ranges else _Null()):
            def fresh(capacity):
                return Cache(cache_kind, depth, ids.shape[0], heads, width // heads, capacity,
                             model.unembed.dtype, "non_contiguous" in bugs)
            cache = fresh(ids.shape[1] + steps)
            out = []
            with (torch.profiler.record_function("forward") if ranges else _Null()):
                token = torch.max(model(ids, cache, 0), dim=-1).indices
            out.append(token)
            for step in range(1, steps):
                with (torch.profiler.record_function("forward") if ranges else _Null()):
                    if "no_kv_cache" in bugs:
                        seq = torch.cat([ids] + [t[:, None] for t in out], dim=1)
                        logits = model(seq, fresh(seq.shape[1]), 0)
                    else:
                        logits = model(token[:, None], cache, ids.shape[1] + step - 1)
                    token = torch.max(logits, dim=-1).indices
                    out.append(token)
                    if "host_sync" in bugs and int(token.min()) < 0:  # an int() of a device scalar
                        break
            finished.append(torch.stack(out, dim=1))
    return torch.cat(finished).tolist()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="narrow")
    parser.add_argument("--cache", choices=("prealloc", "concat"), default="prealloc")
    parser.add_argument("--bug", action="append", choices=BUGS, default=[])
    parser.add_argument("--requests", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--prompt", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--trace")
    parser.add_argument("--trace-layout", choices=LAYOUTS, default="kineto")
    parser.add_argument("--ranges", action="store_true")
    args = parser.parse_args(argv)
    bugs = {bug.split("=")[0] for bug in args.bug}
    fp32_weights = "fp32_ops=matmuls" in args.bug
    torch.manual_seed(1)
    model = TinyLM(args.shape, upcast="fp32_ops" in args.bug, fp32_weights=fp32_weights)
    model.shape = SHAPES[args.shape]
    model = model.to(torch.bfloat16).eval()
    model.inv_freq = model.inv_freq.float()
    prompts = torch.randint(1, model.shape[0], (args.requests, args.prompt))
    with torch.inference_mode():
        run(model, prompts, args.steps, args.batch, bugs, args.cache, False)
        if args.trace:
            with torch.profiler.profile(activities=profiler_activities("cpu"), record_shapes=True) as profile:
                tokens = run(model, prompts, args.steps, args.batch, bugs, args.cache, args.ranges)
            print(f"trace: {args.trace} ({write_trace(profile, args.trace, args.trace_layout)})")
        else:
            tokens = run(model, prompts, args.steps, args.batch, bugs, args.cache, args.ranges)
    for row in tokens:
        print(" ".join(map(str, row)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
