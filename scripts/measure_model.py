"""A random Llama-style decoder of a ``config.json``'s shapes, for ``scripts/measure.py``.

What it runs is what the roofline counts: per layer the q/k/v/o projections (grouped-query
attention), attention against the cache (PyTorch's fused ``scaled_dot_product_attention``),
the gated MLP and two RMSNorms, then the final norm and the lm_head; the input embedding is a
gather. Weights are random: timing depends on shapes, not values. Needs PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F


class _Layer(nn.Module):
    def __init__(self, width: int, heads: int, kv_heads: int, head_dim: int, ffn: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q = nn.Linear(width, heads * head_dim, bias=False)
        self.kv = nn.Linear(width, 2 * kv_heads * head_dim, bias=False)
        self.o = nn.Linear(heads * head_dim, width, bias=False)
        self.gate_up = nn.Linear(width, 2 * ffn, bias=False)
        self.down = nn.Linear(ffn, width, bias=False)
        self.norm1, self.norm2 = nn.RMSNorm(width), nn.RMSNorm(width)

    def forward(self, x: torch.Tensor, cache: torch.Tensor | None, causal: bool) -> torch.Tensor:
        batch, tokens, _ = x.shape
        h = self.norm1(x)
        q = self.q(h).view(batch, tokens, self.heads, self.head_dim).transpose(1, 2)
        k, v = (
            self.kv(h)
            .view(batch, tokens, 2, self.kv_heads, self.head_dim)
            .permute(2, 0, 3, 1, 4)
            .unbind(0)
        )
        if cache is not None:  # the step's own key/value goes into the cache's last slot, in place
            cache[0, :, :, -tokens:] = k
            cache[1, :, :, -tokens:] = v
            k, v = cache[0], cache[1]
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        x = x + self.o(attended.transpose(1, 2).reshape(batch, tokens, -1))
        gate, up = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Decoder(nn.Module):
    """The decoder of ``config`` (Hugging Face keys), with random weights."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__()
        width = int(config["hidden_size"])
        heads = int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads") or heads)
        head_dim = int(config.get("head_dim") or width // heads)
        self.shape = (kv_heads, head_dim)
        self.vocab = int(config["vocab_size"])
        self.embed = nn.Embedding(self.vocab, width)
        self.layers = nn.ModuleList(
            _Layer(width, heads, kv_heads, head_dim, int(config["intermediate_size"]))
            for _ in range(int(config["num_hidden_layers"]))
        )
        self.norm = nn.RMSNorm(width)
        self.lm_head = nn.Linear(width, self.vocab, bias=False)
        if config.get("tie_word_embeddings"):
            self.lm_head.weight = self.embed.weight

    def _tokens(self, batch: int, length: int) -> torch.Tensor:
        device = self.embed.weight.device
        return torch.randint(0, self.vocab, (batch, length), device=device)

    def decode_step(self, batch: int, context: int) -> Callable[[], torch.Tensor]:
        """One decode step of ``batch`` sequences against caches of ``context`` tokens (the
        cache holds ``context`` tokens plus the step's own, written in place)."""
        weight = self.embed.weight
        kv_heads, head_dim = self.shape
        caches = [
            torch.randn(
                2, batch, kv_heads, context + 1, head_dim, device=weight.device, dtype=weight.dtype
            )
            for _ in self.layers
        ]
        tokens = self._tokens(batch, 1)

        def step() -> torch.Tensor:
            x = self.embed(tokens)
            for layer, cache in zip(self.layers, caches, strict=True):
                x = layer(x, cache, causal=False)
            return self.lm_head(self.norm(x))

        return step

    def prefill(self, batch: int, prompt: int) -> Callable[[], torch.Tensor]:
        """The prefill of ``batch`` prompts of ``prompt`` tokens (logits of the last only)."""
        tokens = self._tokens(batch, prompt)

        def run() -> torch.Tensor:
            x = self.embed(tokens)
            for layer in self.layers:
                x = layer(x, None, causal=True)
            return self.lm_head(self.norm(x[:, -1:]))

        return run
