"""Stated-CLM's steady-state chunk as one static-shape function.

Once the cache holds its budget M, every full chunk of c tokens does the same thing with the same
shapes: a forward with gradients on the cached keys and values, one backward of the chunk's LM loss,
and a merge of c adjacent pairs per layer (then the chunk's own c entries are appended, back to M).
Here that step takes the caches of all layers stacked, `[layers, kv heads, M, dim]` (counts `[layers,
M]`), and the chunk's token ids as a device tensor, and returns the same shapes: no host reads, no
Python branch on a tensor value, no size that depends on the data. So `torch.compile(fullgraph=True)`
traces it as one graph (the input gradients included, with dynamo's `trace_autograd_ops`), and a
CUDA graph could replay it. The math is the chunk runner's (`runner.py`): the same attention
(`attention.attend`) and the same merge functions (`merging.py`), with the merge run over all layers
at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lm_eval_longmem.models.bounded_cache.attention import attend
from lm_eval_longmem.models.bounded_cache.layer_cache import LayerCache
from lm_eval_longmem.models.bounded_cache.merging import (
    fisher_average,
    merge_counts,
    merge_groups,
    pair_scores,
    position_decay,
    select_pairs,
)
from lm_eval_longmem.models.runtime.llama_decoder import Decoder, rotate


@dataclass
class StackedCache:
    """Every layer's cache in one tensor each: keys and values [L, Hkv, M, d] (keys before RoPE),
    counts [L, M]."""

    keys: torch.Tensor
    values: torch.Tensor
    counts: torch.Tensor

    @classmethod
    def of(cls, caches: list[LayerCache]) -> StackedCache:
        return cls(
            torch.stack([c.keys for c in caches]),
            torch.stack([c.values for c in caches]),
            torch.stack([c.counts for c in caches]),
        )

    def layers(self) -> list[LayerCache]:
        """Per-layer caches (views), for the chunk runner."""
        return [LayerCache(k, v, n) for k, v, n in zip(self.keys, self.values, self.counts)]


def traced(function):
    """`function` run with dynamo tracing autograd ops, so that `torch.autograd.grad` inside a compiled
    function joins its graph instead of breaking it."""
    import torch._dynamo

    def run(*args):
        with torch._dynamo.config.patch(trace_autograd_ops=True):
            return function(*args)

    return run


class StatedCLMStep:
    """`step(cache, window_ids)`: the chunk `window_ids[:-1]` (c tokens, the last id is the next
    target) against a full cache -> (final hidden states [c, hidden], the cache after the chunk).

    `compiled`: run the step through `torch.compile(fullgraph=True)` (with `backend`); the first call
    per shape traces and compiles (tens of seconds), later calls replay the graph."""

    def __init__(
        self,
        decoder: Decoder,
        budget: int,
        chunk_size: int,
        sink_length: int,
        sigma: float,
        compiled: bool,
        backend: str = "inductor",
    ):
        self.decoder = decoder
        self.budget, self.chunk_size, self.sink_length, self.sigma = budget, chunk_size, sink_length, sigma
        like = decoder.body.embed_tokens.weight
        tables = decoder.rope(budget + chunk_size, like)
        self.cos = torch.stack([cos for cos, _ in tables])  # [L, M + c, r]
        self.sin = torch.stack([sin for _, sin in tables])
        self.decay = position_decay(budget - 1, sigma, like.device)  # eq. 19 over the M - 1 pairs
        self.compiled = compiled
        self._run = traced(torch.compile(self._step, fullgraph=True, backend=backend)) if compiled else self._step

    def __call__(self, cache: StackedCache, window_ids: torch.Tensor) -> tuple[torch.Tensor, StackedCache]:
        hidden, keys, values, counts = self._run(cache.keys, cache.values, cache.counts, window_ids)
        return hidden, StackedCache(keys, values, counts)

    def _step(self, keys: torch.Tensor, values: torch.Tensor, counts: torch.Tensor, window_ids: torch.Tensor):
        d, M, c = self.decoder, self.budget, self.chunk_size
        cos, sin = self.cos, self.sin
        with torch.enable_grad():
            # one leaf per layer: a layer's gradient lands in its own tensor, where slices of one stacked
            # leaf would each add into a zero-filled tensor as large as every layer's cache
            key_leaves = [layer_keys.requires_grad_() for layer_keys in keys.detach().unbind(0)]
            value_leaves = [layer_values.requires_grad_() for layer_values in values.detach().unbind(0)]
            x = d.embed(window_ids[:c])
            causal = torch.full((c, c), float("-inf"), dtype=x.dtype, device=x.device).triu(1)
            window_bias = counts.log().to(x.dtype)[:, None, :].expand(-1, c, -1)  # eq. 17: + log count
            biases = torch.cat([window_bias, causal.expand(counts.shape[0], -1, -1)], dim=2)  # [L, c, M + c]
            new_keys, new_values, received = [], [], []
            for layer in range(d.num_layers):
                q, k, v = d.project(layer, d.attention_input(layer, x))
                joined_keys = rotate(torch.cat([key_leaves[layer], k], dim=1), cos[layer], sin[layer])  # at 0..M+c-1
                joined_values = torch.cat([value_leaves[layer], v], dim=1)
                out, got = attend(
                    q,
                    joined_keys,
                    joined_values,
                    None,
                    cos[layer],
                    sin[layer],
                    d.scaling,
                    True,
                    d.attn_softcap,
                    biases[layer],
                )
                x = d.mlp_block(layer, x + d.attention_output(layer, out))
                new_keys.append(k.detach())
                new_values.append(v.detach())
                received.append(got)
            hidden = d.final_norm(x)
            logits = d.logits(hidden).float()
            loss = F.cross_entropy(logits, window_ids[1:], reduction="sum")
            grads = torch.autograd.grad(loss, key_leaves + value_leaves)
            key_grad, value_grad = torch.stack(grads[: len(key_leaves)]), torch.stack(grads[len(key_leaves) :])
        # the merge of §3.2-3.3 for every layer at once: c pairs each, then the chunk's entries appended
        kept = M - c
        pairs = select_pairs(
            pair_scores(torch.stack(received), self.sink_length, self.sigma, self.decay), c, self.sink_length
        )
        groups = merge_groups(pairs)  # [L, M]
        merged = fisher_average(torch.stack([keys, values]), torch.stack([key_grad, value_grad]), groups, kept)
        ones = torch.ones(counts.shape[0], c, dtype=counts.dtype, device=counts.device)
        return (
            hidden.detach(),
            torch.cat([merged[0], torch.stack(new_keys)], dim=2),
            torch.cat([merged[1], torch.stack(new_values)], dim=2),
            torch.cat([merge_counts(counts, groups, kept), ones], dim=1),
        )
