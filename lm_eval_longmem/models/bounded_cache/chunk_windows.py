"""What every chunk of a row attends to through a sink-and-window cache, for all chunks at once.

The chunk runner feeds a row chunk by chunk (start s = jc) and each chunk's queries see, at
positions re-indexed inside what attention sees: the S sinks at 0..S-1, then r recalled middle
tokens (LongCache; none for StreamingLLM), then the local keys [s - L, s) and the chunk itself.
Seen from a query at its original position t, that is two parts (docs/methods/bounded-caches.md,
"Scoring layer by layer"):

* the **band**: keys [max(S, s - L), t] keep their original distance t - u, so they are rotated
  at their original positions, and chunk j's band is the window of L + c keys ending with its
  chunk, one strided view of the padded keys for every chunk at once;
* the **far keys**: the sinks and the slots (recalled tokens, or before the cache fills the
  middle tokens themselves) sit at window positions S + rank, i.e. shifted by
  max(S, s - L) - S - r from their own, so they are rotated per chunk at those positions.

Each part is one attention call over every chunk (batch = chunks) that also returns its
log-sum-exp, and `merge_partials` (as two-part attention merges Self-Extend's and LM-Infinite's
parts) gives the softmax over their union: the chunk runner's output, with a fixed number of ops
per layer whatever the number of chunks, and nothing read back from the device.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lm_eval_longmem.models.attention.part_attention import SharedMask, masked_attention_with_lse, merge_partials
from lm_eval_longmem.models.runtime.llama_decoder import rotate


@dataclass(frozen=True)
class WindowShape:
    """A cache's shape as the chunk runner fills it: `sinks` first entries, `local` entries before
    each chunk seen at their own distance, `slots` middle tokens at most recalled, `chunk` tokens a step."""

    sinks: int
    local: int
    chunk: int
    slots: int = 0


class ChunkWindows:
    """The per-row layout of `WindowShape` over T tokens: chunk starts, band masks, the middle
    before each chunk. Built once per row and shared by every layer."""

    def __init__(self, shape: WindowShape, length: int, device: torch.device, dtype: torch.dtype):
        self.shape, self.length = shape, length
        c, local = shape.chunk, shape.local
        self.sinks = min(shape.sinks, length)
        self.num_chunks = -(-length // c)
        self.padding = self.num_chunks * c - length
        starts = torch.arange(self.num_chunks, device=device) * c
        # first key of the band: the local window, never the sinks (which are far keys)
        self.band_start = torch.clamp(starts - local, min=shape.sinks)  # [n]
        query = starts[:, None] + torch.arange(c, device=device)[None]  # [n, c] original positions
        self.query_position = query
        self.real_query = query < length
        window_key = starts[:, None] - local + torch.arange(local + c, device=device)[None]  # [n, L + c]
        band = (window_key[:, None, :] >= self.band_start[:, None, None]) & (
            window_key[:, None, :] <= query[:, :, None]
        )
        self.band_mask = SharedMask(band[:, None], dtype)  # [n, 1, c, L + c], the same at every layer
        self.dtype = dtype
        self.sink_mask: SharedMask | None = None  # the far keys' mask when they are the sinks alone
        self.middle_length = self.band_start - shape.sinks  # [n]: tokens between the sinks and the band
        # chunk starts on the host: which chunks recall (more than the budget stored before them)
        self.host_starts = [j * c for j in range(self.num_chunks)]
        # `middle_length` known on the host, for shapes (no read from the device)
        self.host_middle_lengths = [max(0, s - local - shape.sinks) for s in self.host_starts]

    def direct_slots(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens, valid) [n, slots]: before the cache fills, the middle tokens themselves, in order."""
        slot = torch.arange(self.shape.slots, device=self.band_start.device)
        return self.shape.sinks + slot.expand(self.num_chunks, -1), slot[None] < self.middle_length[:, None]


def chunk_window_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    windows: ChunkWindows,
    scale: float,
    softcap: float | None = None,
    slots: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Attention output [H, T, d] of every token as the chunk runner computes it.

    q [H, T, d], k and v [Hkv, T, d]: one layer's projections of the whole row, before RoPE; cos/sin
    cover positions 0..T-1. `slots`: (tokens, valid) [n, P], each row sorted by token among its valid
    entries (a slot's window position is S + its rank), or None for a cache that recalls nothing."""
    H, T, d = q.shape
    n, c, local, pad = windows.num_chunks, windows.shape.chunk, windows.shape.local, windows.padding
    queries = F.pad(rotate(q, cos[:T], sin[:T]), (0, 0, 0, pad)).view(H, n, c, d).transpose(0, 1)  # [n, H, c, d]

    def windows_of(x):  # [Hkv, T, d] -> [n, Hkv, L + c, d], chunk j's keys [jc - L, jc + c)
        return F.pad(x, (0, 0, local, pad)).unfold(1, local + c, c).permute(1, 0, 3, 2)

    band = masked_attention_with_lse(
        queries, windows_of(rotate(k, cos[:T], sin[:T])), windows_of(v), windows.band_mask, scale, softcap
    )
    partials = [band]
    far = _far_keys(k, v, cos, sin, windows, slots)
    if far is not None:
        partials.append(masked_attention_with_lse(queries, *far, scale, softcap))
    out = merge_partials(partials)  # [n, H, c, d]
    return out.transpose(0, 1).reshape(H, n * c, -1)[:, :T]


def _far_keys(k, v, cos, sin, windows: ChunkWindows, slots):
    """(keys [n, Hkv, F, d] rotated per chunk, values, mask [n, 1, c, F]) of the sinks and slots."""
    S, n = windows.sinks, windows.num_chunks
    device = k.device
    sink = torch.arange(S, device=device)
    if slots is None:
        if S == 0:
            return None
        tokens, valid = sink.expand(n, -1), torch.ones(n, S, dtype=torch.bool, device=device)
        shift = windows.middle_length  # nothing recalled: the sinks move up to the band
        position = sink[None] + shift[:, None]
    else:
        slot_tokens, slot_valid = slots
        rank = torch.cumsum(slot_valid, dim=1) - 1
        shift = windows.middle_length - slot_valid.sum(dim=1)  # window position minus the original one
        tokens = torch.cat([sink.expand(n, -1), slot_tokens], dim=1)
        valid = torch.cat([torch.ones(n, S, dtype=torch.bool, device=device), slot_valid], dim=1)
        position = torch.cat([sink.expand(n, -1), windows.shape.sinks + rank.clamp(min=0)], dim=1) + shift[:, None]
    if tokens.shape[1] == 0:
        return None
    if slots is None and windows.sink_mask is None:
        windows.sink_mask = SharedMask(_far_mask(tokens, valid, windows), windows.dtype)
    # invalid slots (a middle shorter than the slot list): any token and position, masked anyway
    tokens, position = tokens.clamp(max=k.shape[1] - 1), position.clamp(0, cos.shape[0] - 1)
    keys = rotate(k[:, tokens], cos[position], sin[position]).transpose(0, 1)  # [n, Hkv, F, d]
    values = v[:, tokens].transpose(0, 1)
    mask = windows.sink_mask if slots is None else _far_mask(tokens, valid, windows)
    return keys, values, mask


def _far_mask(tokens, valid, windows: ChunkWindows) -> torch.Tensor:
    """[n, 1, c, F]: valid far keys, causal (a sink may come after a query of the first chunk)."""
    return (valid[:, None, :] & (tokens[:, None, :] <= windows.query_position[:, :, None]))[:, None]
