#!/usr/bin/env python3
"""Hugging Face generate() with the five inference bugs as HF users make them, and a trace.

The model is transformers' own LlamaForCausalLM, built from a tiny random LlamaConfig in code
(no download: HF_HUB_OFFLINE=1 is set), and generation is model.generate() — the path most
PyTorch users take. Each bug is the mistake as it is made with HF:

  no_kv_cache             generate(use_cache=False): every step re-runs the whole sequence
  non_contiguous          a cache kept position-major [batch, position, heads, head_dim] (the layout
                          the projections produce), handed to attention through .contiguous() every step
  host_sync=token         a stopping criterion that reads bool((last == eos).all()) every step
  host_sync=sequence      a streamer-like check reading int(tokens[b]) for every sequence, every step
  host_sync=layer         a forward hook on each decoder layer: `if not torch.isfinite(h).all():`
  fp32_ops=model          the model left in fp32 (from_pretrained without torch_dtype, no autocast)
  fp32_ops=norms          a bf16 model whose RMSNorms upcast to fp32 and back (transformers' stock
                          LlamaRMSNorm, run without a fused norm)
  sequential_generation   the prompts generated one by one instead of as one padded batch

The fixed program: a bf16 model with a fused RMSNorm (torch's F.rms_norm), the default
DynamicCache, no reads until generate() returns, all prompts in one batch.

    .venv/bin/python examples/pytorch/hf_generate.py --bug host_sync=token --trace t.json.gz
    ./build/decodelab diagnose t.json.gz

Recorded on whatever device runs it (the CPU here: there is no GPU on the development
machines): torch.profiler with record_shapes=True, written by export_chrome_trace().
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, StoppingCriteria, StoppingCriteriaList  # noqa: E402
from transformers.models.llama import modeling_llama  # noqa: E402

BUGS = {
    "no_kv_cache": [None],
    "non_contiguous": ["copy"],
    "host_sync": ["token", "sequence", "layer"],
    "fp32_ops": ["norms", "model"],
    "sequential_generation": [None],
}
EOS = 2
PAD = 0


def tiny_config() -> LlamaConfig:
    # Multi-head attention (kv heads = heads): grouped-query attention would add HF's repeat_kv,
    # a copy of the whole cache before attention every step (docs/diagnosis.md).
    return LlamaConfig(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128,
                       bos_token_id=1, eos_token_id=EOS, pad_token_id=PAD, tie_word_embeddings=False,
                       attn_implementation="sdpa")


def fused_rms_norm(self, hidden_states):
    """What a fused RMSNorm kernel does: statistics in fp32 inside the kernel, tensors in the
    model's dtype (torch's F.rms_norm)."""
    return F.rms_norm(hidden_states, self.weight.shape, self.weight, self.variance_epsilon)


class PositionMajorCache(DynamicCache):
    """The non_contiguous bug: K/V stored [batch, position, heads, head_dim] and grown by
    concatenation on the position axis; attention wants [batch, heads, position, head_dim], so
    every step hands it a transposed view made dense with .contiguous() — the whole cache copied."""

    def __init__(self):
        super().__init__()
        self.position_major_keys: list[torch.Tensor] = []
        self.position_major_values: list[torch.Tensor] = []

    def update(self, key_states, value_states, layer_idx, cache_kwargs=None):
        if layer_idx == 0:
            self._seen_tokens += key_states.shape[-2]
        keys, values = key_states.transpose(1, 2), value_states.transpose(1, 2)
        if len(self.position_major_keys) <= layer_idx:
            self.position_major_keys.append(keys.contiguous())
            self.position_major_values.append(values.contiguous())
        else:
            self.position_major_keys[layer_idx] = torch.cat([self.position_major_keys[layer_idx], keys], dim=1)
            self.position_major_values[layer_idx] = torch.cat([self.position_major_values[layer_idx], values], dim=1)
        # key_cache/value_cache only for get_seq_length() and friends: the transposed views.
        full_keys = self.position_major_keys[layer_idx].transpose(1, 2)
        full_values = self.position_major_values[layer_idx].transpose(1, 2)
        if len(self.key_cache) <= layer_idx:
            self.key_cache.append(full_keys), self.value_cache.append(full_values)
        else:
            self.key_cache[layer_idx], self.value_cache[layer_idx] = full_keys, full_values
        return full_keys.contiguous(), full_values.contiguous()


class EosEveryStep(StoppingCriteria):
    """host_sync=token: the stop check pulls a bool to the host after every step."""

    def __call__(self, input_ids, scores, **kwargs):
        done = bool((input_ids[:, -1] == EOS).all())
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


class EosPerSequence(StoppingCriteria):
    """host_sync=sequence: a streamer-like check reading each sequence's last token, every step."""

    def __call__(self, input_ids, scores, **kwargs):
        finished = [int(input_ids[b, -1]) == EOS for b in range(input_ids.shape[0])]
        return torch.tensor(finished, dtype=torch.bool, device=input_ids.device)


def watch_layers(model) -> None:
    """host_sync=layer: activation watching, an `if` on a device value after every layer."""

    def check(module, inputs, output):
        hidden = output[0] if isinstance(output, tuple) else output
        if not torch.isfinite(hidden).all():
            raise FloatingPointError("non-finite activations")

    for layer in model.model.layers:
        layer.register_forward_hook(check)


def parse_bug(text: str) -> tuple[str, str | None]:
    name, _, variant = text.partition("=")
    if name not in BUGS:
        raise argparse.ArgumentTypeError(f"unknown bug '{name}' (expected one of {', '.join(BUGS)})")
    if not variant:
        return name, BUGS[name][0]
    if variant not in BUGS[name]:
        raise argparse.ArgumentTypeError(f"bug {name}: unknown variant '{variant}' (expected {', '.join(map(str, BUGS[name]))})")
    return name, variant


def build_model(bugs: dict, device: str):
    torch.manual_seed(0)
    config = tiny_config()
    fp32_ops = bugs.get("fp32_ops")
    if fp32_ops != "norms":  # the stock norm upcasts; the fixed model uses a fused one
        modeling_llama.LlamaRMSNorm.forward = fused_rms_norm
    model = LlamaForCausalLM(config)
    if fp32_ops != "model":
        model = model.to(torch.bfloat16)
    model = model.to(device).eval()
    if bugs.get("host_sync") == "layer":
        watch_layers(model)
    return model


def run_generate(model, prompts: torch.Tensor, new_tokens: int, bugs: dict) -> torch.Tensor:
    """prompts [requests, length] (same length: the padded batch) → generated ids."""
    options = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, pad_token_id=PAD,
                   use_cache="no_kv_cache" not in bugs)
    criteria = {"token": EosEveryStep(), "sequence": EosPerSequence()}.get(bugs.get("host_sync"))
    if criteria is not None:
        options["stopping_criteria"] = StoppingCriteriaList([criteria])

    def one(batch: torch.Tensor) -> torch.Tensor:
        kwargs = dict(options)
        if "non_contiguous" in bugs and "no_kv_cache" not in bugs:
            kwargs["past_key_values"] = PositionMajorCache()
        return model.generate(batch, attention_mask=torch.ones_like(batch), **kwargs)

    if "sequential_generation" in bugs:  # one request at a time
        return torch.cat([one(prompts[i:i + 1]) for i in range(prompts.shape[0])])
    return one(prompts)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bug", action="append", type=parse_bug, default=[], metavar="NAME[=VARIANT]",
                        help="switch a bug on (repeatable): " + ", ".join(BUGS))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--requests", type=int, default=2)
    parser.add_argument("--prompt-length", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=5)
    parser.add_argument("--trace", help="write a torch.profiler Chrome trace here (.json or .json.gz)")
    args = parser.parse_args(argv)
    bugs = dict(args.bug)

    model = build_model(bugs, args.device)
    generator = torch.Generator().manual_seed(1)
    prompts = torch.randint(3, model.config.vocab_size, (args.requests, args.prompt_length), generator=generator)
    prompts = prompts.to(args.device)
    with torch.inference_mode():
        run_generate(model, prompts, 2, bugs)  # warm-up, outside the trace
        if args.trace:
            activities = [torch.profiler.ProfilerActivity.CPU]
            if args.device.startswith("cuda"):
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            with torch.profiler.profile(activities=activities, record_shapes=True) as profile:
                tokens = run_generate(model, prompts, args.new_tokens, bugs)
            profile.export_chrome_trace(args.trace)
        else:
            tokens = run_generate(model, prompts, args.new_tokens, bugs)
    switched = ", ".join(n if v is None else f"{n}={v}" for n, v in bugs.items()) or "none"
    print(f"transformers LlamaForCausalLM (tiny) on {args.device}: {args.requests} requests, "
          f"{args.prompt_length}+{args.new_tokens} tokens; bugs: {switched}")
    for row in tokens.tolist():
        print(" ".join(map(str, row)))
    if args.trace:
        print(f"trace: {args.trace}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
