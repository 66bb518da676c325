"""A small Llama-style decoder in plain PyTorch: the model of the course's inference lab.

RMSNorm, rotate-half RoPE, grouped-query attention, a SwiGLU MLP and an untied lm_head, with a
preallocated KV cache — no `transformers`. Three of the five classic bugs live here, each as
small as the real mistake (`Bugs` says which are on); `generate.py` holds the other two and
the profiler.

One non-obvious choice: attention folds each KV group's query heads into rows
(`[batch, kv_heads, group * tokens, head_dim]`), so it reads the cache as it is stored: no
repeat_kv copy of the cache and no implicit copy inside torch.matmul in a decode step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class DecoderConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    max_position_embeddings: int = 256

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads


# Two shapes, kept tiny so that a trace of a whole generation stays small.
MODELS = {
    "tiny": DecoderConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2),
    "small": DecoderConfig(vocab_size=384, hidden_size=96, intermediate_size=192, num_hidden_layers=3,
                           num_attention_heads=6, num_key_value_heads=2),
}


@dataclass
class Bugs:
    """Which deviations the model makes (the generate loop owns no_kv_cache, host_sync
    token/sequence and sequential_generation)."""
    non_contiguous: str | None = None   # "copy" | "strided": a position-major cache
    fp32_ops: str | None = None         # "norms" | "matmuls" | "all"
    host_sync_layer: bool = False       # an .item() per layer (activation watching)
    layer_reads: list = field(default_factory=list)

    @property
    def fp32_norms(self) -> bool:
        return self.fp32_ops in ("norms", "all")

    @property
    def fp32_matmuls(self) -> bool:
        return self.fp32_ops in ("matmuls", "all")


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float, upcast: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps
        self.upcast = upcast

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.upcast:  # bug fp32_ops (norms): the statistics in fp32, then back
            h = x.float()
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * h.to(x.dtype)
        # In the model's dtype: torch's mean accumulates in fp32 inside the kernel.
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Linear(nn.Linear):
    """nn.Linear; in the fp32_ops (matmuls) bug its weight was never cast to the model's
    dtype, so every call casts the activations to fp32 and back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight.dtype != x.dtype:
            return F.linear(x.to(self.weight.dtype), self.weight).to(x.dtype)
        return F.linear(x, self.weight)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class KVCache:
    """Per layer one K and one V buffer for `batch` sequences of up to `capacity` positions.
    Head-major `[batch, kv_heads, position, head_dim]` (what attention reads); the
    non_contiguous bug keeps them position-major `[batch, position, kv_heads, head_dim]`, the
    layout the projections produce, and hands attention a transposed view."""

    def __init__(self, config: DecoderConfig, batch: int, capacity: int, dtype, device, bugs: Bugs):
        self.position_major = bugs.non_contiguous is not None
        self.copy_for_attention = bugs.non_contiguous == "copy"
        kv, d = config.num_key_value_heads, config.head_dim
        shape = (batch, capacity, kv, d) if self.position_major else (batch, kv, capacity, d)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(config.num_hidden_layers)]
        self.values = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(config.num_hidden_layers)]

    def store(self, layer: int, start: int, k: torch.Tensor, v: torch.Tensor) -> None:
        """k, v: [batch, tokens, kv_heads, head_dim] for positions start .. start + tokens."""
        end = start + k.shape[1]
        if self.position_major:
            self.keys[layer][:, start:end] = k
            self.values[layer][:, start:end] = v
        else:
            self.keys[layer][:, :, start:end] = k.transpose(1, 2)
            self.values[layer][:, :, start:end] = v.transpose(1, 2)

    def read(self, layer: int, end: int) -> tuple[torch.Tensor, torch.Tensor]:
        """K and V of positions 0 .. end as [batch, kv_heads, end, head_dim] views."""
        if not self.position_major:
            return self.keys[layer][:, :, :end], self.values[layer][:, :, :end]
        k = self.keys[layer][:, :end].transpose(1, 2)
        v = self.values[layer][:, :end].transpose(1, 2)
        if self.copy_for_attention:  # bug non_contiguous (copy): the whole cache, every step
            return k.contiguous(), v.contiguous()
        return k, v  # bug non_contiguous (strided): torch reads (or silently copies) the view


class Attention(nn.Module):
    def __init__(self, config: DecoderConfig, bugs: Bugs):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = (config.num_attention_heads, config.num_key_value_heads,
                                                    config.head_dim)
        self.group = self.heads // self.kv_heads
        self.q_proj = Linear(config.hidden_size, self.heads * self.head_dim, bias=False)
        self.k_proj = Linear(config.hidden_size, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = Linear(config.hidden_size, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = Linear(self.heads * self.head_dim, config.hidden_size, bias=False)
        self.bugs = bugs

    def forward(self, x, layer: int, cache: KVCache, start: int, cos, sin) -> torch.Tensor:
        batch, tokens, _ = x.shape
        q = self.q_proj(x).view(batch, tokens, self.heads, self.head_dim)
        k = self.k_proj(x).view(batch, tokens, self.kv_heads, self.head_dim)
        v = self.v_proj(x).view(batch, tokens, self.kv_heads, self.head_dim)
        q = q * cos + rotate_half(q) * sin  # cos, sin: [tokens, 1, head_dim]
        k = k * cos + rotate_half(k) * sin
        cache.store(layer, start, k, v)
        keys, values = cache.read(layer, start + tokens)  # [batch, kv_heads, positions, head_dim]

        # Query head h uses KV head h // group: fold each group's heads into rows.
        q = q.view(batch, tokens, self.kv_heads, self.group, self.head_dim).permute(0, 2, 3, 1, 4)
        q = q.reshape(batch, self.kv_heads, self.group * tokens, self.head_dim)
        scores = torch.matmul(q, keys.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if tokens > 1:  # causal mask: row r is token r % tokens, at position start + r % tokens
            query_position = start + torch.arange(self.group * tokens, device=x.device) % tokens
            key_position = torch.arange(start + tokens, device=x.device)
            scores = scores.masked_fill(key_position[None, :] > query_position[:, None], float("-inf"))
        if self.bugs.fp32_norms:  # bug fp32_ops (norms): softmax upcast too
            probabilities = scores.float().softmax(dim=-1).to(q.dtype)
        else:
            probabilities = scores.softmax(dim=-1)
        out = torch.matmul(probabilities, values)  # [batch, kv_heads, group * tokens, head_dim]
        out = out.view(batch, self.kv_heads, self.group, tokens, self.head_dim).permute(0, 3, 1, 2, 4)
        return self.o_proj(out.reshape(batch, tokens, self.heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, config: DecoderConfig):
        super().__init__()
        self.gate_proj = Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, config: DecoderConfig, bugs: Bugs):
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps, bugs.fp32_norms)
        self.self_attn = Attention(config, bugs)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps, bugs.fp32_norms)
        self.mlp = MLP(config)

    def forward(self, h, layer: int, cache: KVCache, start: int, cos, sin) -> torch.Tensor:
        h = h + self.self_attn(self.input_layernorm(h), layer, cache, start, cos, sin)
        return h + self.mlp(self.post_attention_layernorm(h))


class LlamaDecoder(nn.Module):
    def __init__(self, config: DecoderConfig, bugs: Bugs):
        super().__init__()
        self.config = config
        self.bugs = bugs
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(config, bugs) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps, bugs.fp32_norms)
        self.lm_head = Linear(config.hidden_size, config.vocab_size, bias=False)
        inv_freq = config.rope_theta ** (-torch.arange(0, config.head_dim, 2).float() / config.head_dim)
        angles = torch.outer(torch.arange(config.max_position_embeddings).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)  # [positions, head_dim]
        self.register_buffer("cos_table", angles.cos(), persistent=False)
        self.register_buffer("sin_table", angles.sin(), persistent=False)

    def to_dtype(self, dtype) -> "LlamaDecoder":
        """Casts the model once (RoPE tables included); the fp32_ops (matmuls) bug leaves the
        projections' weights in fp32."""
        self.to(dtype)
        if self.bugs.fp32_matmuls:
            for module in self.modules():
                if isinstance(module, Linear):
                    module.float()
        return self

    def new_cache(self, batch: int, capacity: int) -> KVCache:
        return KVCache(self.config, batch, capacity, self.embed_tokens.weight.dtype, self.embed_tokens.weight.device,
                       self.bugs)

    def forward(self, tokens: torch.Tensor, cache: KVCache, start: int) -> torch.Tensor:
        """tokens [batch, n] at positions start .. start + n → logits of the last position
        [batch, vocab]."""
        n = tokens.shape[1]
        cos = self.cos_table[start:start + n, None, :]
        sin = self.sin_table[start:start + n, None, :]
        h = self.embed_tokens(tokens)
        for index, layer in enumerate(self.layers):
            h = layer(h, index, cache, start, cos, sin)
            if self.bugs.host_sync_layer:  # bug host_sync (layer): watching activations
                self.bugs.layer_reads.append(h.abs().amax().item())
        return self.lm_head(self.norm(h[:, -1, :]))
