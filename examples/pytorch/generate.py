#!/usr/bin/env python3
"""The course's inference lab in PyTorch: greedy generation with a small Llama-style decoder
(llama_decoder.py), each of the five classic bugs switchable from the command line, and a
torch.profiler trace of every run that `decodelab diagnose` reads.

    python3 examples/pytorch/generate.py --bug host_sync=token --trace run.json
    decodelab diagnose run.json

Bugs (any combination; the names are decodelab's):
  no_kv_cache             every step re-runs the whole sequence (the cache is rebuilt per call)
  non_contiguous[=copy]   a position-major cache; attention reads it through .contiguous()
  non_contiguous=strided  ... or through the transposed view itself
  host_sync[=token]       an .item() stop-token check every step
  host_sync=sequence      one .item() per sequence every step
  host_sync=layer         an .item() per layer (activation watching)
  fp32_ops[=all]          norms and softmax upcast to fp32, and fp32 projections
  fp32_ops=norms|matmuls  one of the two
  sequential_generation   the requests one at a time instead of one batch

The trace: torch.profiler with record_shapes=True, written by torch 2.x's own
export_chrome_trace() (trace_export.py; run it with the venv's python, requirements/torch.txt).
--ranges adds record_function ranges around each generation, prefill and decode step; the
diagnosis does not need them.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from llama_decoder import MODELS, Bugs, LlamaDecoder
from trace_export import LAYOUTS, profiler_activities, write_trace

BUG_VARIANTS = {
    "no_kv_cache": [None],
    "non_contiguous": ["copy", "strided"],
    "host_sync": ["token", "sequence", "layer"],
    "fp32_ops": ["all", "norms", "matmuls"],
    "sequential_generation": [None],
}
EOS_TOKEN = 0
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def parse_bug(text: str) -> tuple[str, str | None]:
    name, _, variant = text.partition("=")
    if name not in BUG_VARIANTS:
        raise argparse.ArgumentTypeError(f"unknown bug '{name}' (expected one of {', '.join(BUG_VARIANTS)})")
    variants = BUG_VARIANTS[name]
    if not variant:
        return name, variants[0]
    if variant not in variants:
        raise argparse.ArgumentTypeError(f"bug {name}: unknown variant '{variant}' (expected {', '.join(map(str, variants))})")
    return name, variant


class Ranges:
    """record_function ranges when asked for, else nothing."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, name: str):
        if self.enabled:
            return torch.profiler.record_function(name)
        return _NoRange()


class _NoRange:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def generate_group(model: LlamaDecoder, prompts: torch.Tensor, new_tokens: int, bugs: dict, ranges: Ranges):
    """Greedy decoding of one batch of equal-length prompts [batch, prompt] → [batch, new_tokens]."""
    batch, prompt_length = prompts.shape
    host_sync = bugs.get("host_sync")
    cache = model.new_cache(batch, prompt_length + new_tokens)
    with ranges("prefill"):
        logits = model(prompts, cache, start=0)
        next_token = logits.argmax(dim=-1)  # [batch]: stays on the device
    generated = [next_token]
    for step in range(new_tokens - 1):
        with ranges(f"decode step {step}"):
            position = prompt_length + step
            if "no_kv_cache" in bugs:  # the whole sequence again, into a fresh cache
                sequence = torch.cat([prompts, torch.stack(generated, dim=1)], dim=1)
                logits = model(sequence, model.new_cache(batch, sequence.shape[1]), start=0)
            else:
                logits = model(next_token[:, None], cache, start=position)
            next_token = logits.argmax(dim=-1)
            generated.append(next_token)
            if host_sync == "token" and (next_token == EOS_TOKEN).all():  # one read per step
                break
            if host_sync == "sequence":  # one read per sequence, every step
                finished = [token.item() == EOS_TOKEN for token in next_token]
                if all(finished):
                    break
    return torch.stack(generated, dim=1)


def generate(model: LlamaDecoder, prompts: torch.Tensor, new_tokens: int, batch_size: int, bugs: dict,
             ranges: Ranges) -> list[list[int]]:
    if "sequential_generation" in bugs:
        batch_size = 1
    outputs = []
    for first in range(0, prompts.shape[0], batch_size):
        with ranges("generate"):
            outputs.append(generate_group(model, prompts[first:first + batch_size], new_tokens, bugs, ranges))
    tokens = torch.cat(outputs).tolist()  # the one read of the fixed path, after the last group
    return [row[:row.index(EOS_TOKEN) + 1] if EOS_TOKEN in row else row for row in tokens]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bug", action="append", type=parse_bug, default=[], metavar="NAME[=VARIANT]",
                        help="switch a bug on (repeatable): " + ", ".join(BUG_VARIANTS))
    parser.add_argument("--model", choices=sorted(MODELS), default="tiny")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16",
                        help="model dtype")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--requests", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--prompt-length", type=int, default=6)
    parser.add_argument("--new-tokens", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trace", help="write a torch.profiler Chrome trace here (.json or .json.gz)")
    parser.add_argument("--trace-layout", choices=LAYOUTS, default="kineto",
                        help="kineto: torch's own export_chrome_trace(); kineto-no-strides: the same without "
                             "Input Strides, as torch before 2.1 writes it")
    parser.add_argument("--ranges", action="store_true",
                        help="record_function ranges around each generation, prefill and decode step")
    args = parser.parse_args(argv)
    for name in ("requests", "batch_size", "prompt_length", "new_tokens"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")

    bugs = dict(args.bug)
    torch.manual_seed(args.seed)
    config = MODELS[args.model]
    if args.prompt_length + args.new_tokens > config.max_position_embeddings:
        parser.error(f"--prompt-length + --new-tokens exceeds the model's {config.max_position_embeddings} positions")
    model_bugs = Bugs(non_contiguous=bugs.get("non_contiguous"), fp32_ops=bugs.get("fp32_ops"),
                      host_sync_layer=bugs.get("host_sync") == "layer")
    model = LlamaDecoder(config, model_bugs).to(args.device).to_dtype(DTYPES[args.dtype]).eval()
    prompts = torch.randint(1, config.vocab_size, (args.requests, args.prompt_length), device=args.device)

    with torch.inference_mode():
        generate(model, prompts, args.new_tokens, args.batch_size, bugs, Ranges(False))  # warm-up
        began = time.perf_counter()
        if args.trace:
            with torch.profiler.profile(activities=profiler_activities(args.device), record_shapes=True) as profile:
                tokens = generate(model, prompts, args.new_tokens, args.batch_size, bugs, Ranges(args.ranges))
            layout = write_trace(profile, args.trace, args.trace_layout)
        else:
            tokens = generate(model, prompts, args.new_tokens, args.batch_size, bugs, Ranges(args.ranges))
        seconds = time.perf_counter() - began

    switched = ", ".join(name if variant is None else f"{name}={variant}" for name, variant in bugs.items()) or "none"
    print(f"{args.model} {args.dtype} on {args.device}: {args.requests} requests, batch {args.batch_size}, "
          f"{args.prompt_length}+{args.new_tokens} tokens; bugs: {switched}; {seconds * 1e3:.1f} ms")
    for row in tokens:
        print(" ".join(map(str, row)))
    if args.trace:
        print(f"trace: {args.trace} ({layout})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
