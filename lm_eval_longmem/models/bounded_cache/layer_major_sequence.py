"""Scoring through a sink-and-window cache, one layer at a time over the whole row.

At layer l, what the cache holds after chunk j depends only on layer l's keys and values of
earlier tokens, so the row can run one layer over every token before the next layer, instead of
one chunk through every layer before the next chunk: the projections, the MLP and the two
attention parts (`chunk_windows.py`) each run once per layer, and the number of ops a call
dispatches does not grow with the number of chunks (each a kernel launch on a GPU). The results
are the chunk runner's (`BoundedCacheMethod.make_chunk_runner_scorer`, kept as the reference and
tested against this), up to rounding. For the shared `StreamingScorer` it is a sequence fed in one
piece, the whole row. Generation keeps the chunk runner: a decoded token needs the cache as it stands.
"""

from __future__ import annotations

from typing import Protocol

import torch

from lm_eval_longmem.models.bounded_cache.chunk_windows import ChunkWindows, WindowShape, chunk_window_attention
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.token_upload import ids_to_device


class SlotPicker(Protocol):
    def __call__(self, queries: torch.Tensor, keys: torch.Tensor, windows: ChunkWindows):
        """(tokens, valid) [n, slots] for one layer from its pre-RoPE queries [H, T, d] and keys [Hkv, T, d]."""


class LayerMajorSequence:
    """Keeps nothing between rows: one object serves every row (`lambda: sequence` starts one)."""

    def __init__(self, decoder: Decoder, shape: WindowShape, pick_slots: SlotPicker | None = None):
        self.decoder = decoder
        self.shape = shape
        self.pick_slots = pick_slots

    def feed_pieces(self, ids: list[int], read_from: int = 0, last: bool = False):
        yield 0, self.hidden_states(ids_to_device(ids, self.decoder.device))

    def head(self, rows: torch.Tensor) -> torch.Tensor:
        return self.decoder.logits(rows)

    def hidden_states(self, ids: torch.Tensor) -> torch.Tensor:
        """Final hidden states [T, hidden] of the row `ids` [T] (a tensor on the model's device)."""
        d = self.decoder
        x = d.embed(ids.to(d.device))
        windows = ChunkWindows(self.shape, ids.shape[0], x.device, x.dtype)
        tables = d.rope(ids.shape[0], x)
        direct = windows.direct_slots() if self.pick_slots is not None else None
        for layer in range(d.num_layers):
            cos, sin = tables[layer]
            q, k, v = d.project(layer, d.attention_input(layer, x))
            slots = self.pick_slots(q, k, windows) if self.pick_slots is not None else None
            if slots is None:
                slots = direct
            out = chunk_window_attention(q, k, v, cos, sin, windows, d.scaling, d.attn_softcap, slots)
            x = d.mlp_block(layer, x + d.attention_output(layer, out))
        return d.final_norm(x)
