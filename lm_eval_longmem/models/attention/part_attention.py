"""Exact softmax attention over keys that come in parts, each part scored with its own
rotation of the queries and keys.

Self-Extend (neighbour keys at true distance + far keys at grouped distance) and LM-Infinite
(keys at true distance + far global keys at the clamped distance) are both this: per query,
a set of keys split into two disjoint parts, part p scored as q_p . k_p. One softmax over both
parts is computed without materializing the full matrix and without a log-sum-exp merge:

* the two query forms are concatenated along the head dimension, [q_0, q_1], and each key
  form is padded with zeros into its own slot ([k_0, 0] or [0, k_1]), so one product gives
  q_0.k_0 for the keys of part 0 and q_1.k_1 for those of part 1;
* per block of queries only the key ranges a part can reach are gathered (a window, the
  global tokens, the far past), with a boolean mask saying which (query, key) pairs belong to
  the part; a key in both ranges is counted once because the parts' masks are disjoint;
* the block is handed to SDPA (with the mask) or to the eager matmul-softmax, so memory is
  bounded by the block size, not the square of the sequence length.

A method supplies a `PartRule`: its query/key forms, the key ranges per query block and the
mask predicate. Positions come from transformers' `position_ids`; keys are the (rotated) keys
of the KV cache, so prefill and cached decoding run the same code.
"""

from __future__ import annotations

from typing import Protocol

import torch
import torch.nn.functional as F

Range = tuple[int, int]
_EAGER_BLOCK_ELEMENTS = 1 << 25  # scores per eager block (128 MiB in fp32)
_SDPA_BLOCK_QUERIES = 1024
_SDPA_MASK_ELEMENTS = 1 << 27


class PartRule(Protocol):
    def forms(self, part: int, query, key, query_pos, key_pos, inv_freq) -> tuple[torch.Tensor, torch.Tensor]:
        """(queries, keys) of `part`, rotated as the part needs (shapes as the inputs)."""

    def key_ranges(self, part: int, first_query: int, end_query: int, key_pos: torch.Tensor) -> list[Range]:
        """Key indices [start, stop) that queries first_query..end_query-1 (KV indices) may use in `part`."""

    def allowed(self, part: int, distance: torch.Tensor, key_pos: torch.Tensor) -> torch.Tensor:
        """Which (query, key) pairs belong to `part`: distance (q, k) and key_pos (batch, k) -> (batch|1, 1, q, k)."""


NUM_PARTS = 2


def merge_ranges(ranges: list[Range], length: int) -> list[Range]:
    """Clip to [0, length), drop empty ones, and merge overlaps so no key is taken twice."""
    clipped = sorted((max(0, a), min(length, b)) for a, b in ranges)
    merged: list[list[int]] = []
    for a, b in clipped:
        if a >= b:
            continue
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def positions(position_ids: torch.Tensor | None, batch: int, q_len: int, kv_len: int, device):
    """(query positions (batch, q_len), key positions (batch, kv_len)).

    Queries are the last q_len entries of the KV cache, and a row's tokens are contiguous
    (left padding shifts a row, right padding only appends), so key index i of row b sits at
    position i + (last query position - (kv_len - 1)). Padding keys get positions outside the
    row; the attention mask excludes them."""
    if position_ids is None:
        position_ids = torch.arange(kv_len - q_len, kv_len, device=device)[None]
    query_pos = position_ids.to(device=device, dtype=torch.long).expand(batch, q_len)
    shift = query_pos[:, -1:] - (kv_len - 1)
    key_pos = torch.arange(kv_len, device=device)[None] + shift
    return query_pos, key_pos


def part_attention(
    rule: PartRule,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    position_ids: torch.Tensor | None,
    inv_freq: torch.Tensor,
    backend: str,
) -> torch.Tensor:
    """Attention output (batch, q_len, heads, head_dim) for `rule`; `backend` is 'sdpa' or 'eager'."""
    batch, heads, q_len, _ = query.shape
    kv_len = key.shape[2]
    groups = heads // key.shape[1]
    offset = kv_len - q_len
    query_pos, key_pos = positions(position_ids, batch, q_len, kv_len, query.device)
    padding = _as_bool_mask(attention_mask)
    forms: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    output = query.new_empty(batch, heads, q_len, value.shape[-1])
    block = _block_size(backend, batch, heads, q_len, kv_len)
    for start in range(0, q_len, block):
        stop = min(start + block, q_len)
        first, end = offset + start, offset + stop
        query_index = torch.arange(first, end, device=query.device)
        pieces = []
        for part in range(NUM_PARTS):
            ranges = merge_ranges(rule.key_ranges(part, first, end, key_pos), kv_len)
            if not ranges:
                continue
            if part not in forms:
                forms[part] = rule.forms(part, query, key, query_pos, key_pos, inv_freq)
            part_queries, part_keys = forms[part]
            key_index = torch.cat([torch.arange(a, b, device=query.device) for a, b in ranges])
            distance = query_index[:, None] - key_index[None, :]
            mask = rule.allowed(part, distance, key_pos[:, key_index]) & (distance >= 0)
            if padding is not None:
                mask = mask & padding[:, :, start:stop][..., key_index]
            pieces.append(
                (
                    part,
                    part_queries[:, :, start:stop],
                    _gather(part_keys, ranges),
                    _gather(value, ranges),
                    mask,
                )
            )
        q, k, v, mask = _concatenate(pieces)
        mask = mask | ~mask.any(dim=-1, keepdim=True)  # rows with no key at all (padding queries): keep finite
        output[:, :, start:stop] = _attend(backend, q, k, v, mask, scaling, groups)
    return output.transpose(1, 2).contiguous()


def _gather(x: torch.Tensor, ranges: list[Range]) -> torch.Tensor:
    if len(ranges) == 1:
        a, b = ranges[0]
        return x[:, :, a:b]
    return torch.cat([x[:, :, a:b] for a, b in ranges], dim=2)


def _concatenate(pieces):
    """One (queries, keys, values, mask) from the parts: queries side by side along the head
    dimension, each part's keys zero-padded into its own slot, parts stacked along the keys."""
    if len(pieces) == 1:
        _, q, k, v, mask = pieces[0]
        return q, k, v, mask
    slots = len(pieces)
    q = torch.cat([p[1] for p in pieces], dim=-1)
    keys = []
    for slot, (_, _, k, _, _) in enumerate(pieces):
        zeros_before = k.new_zeros(*k.shape[:-1], k.shape[-1] * slot)
        zeros_after = k.new_zeros(*k.shape[:-1], k.shape[-1] * (slots - slot - 1))
        keys.append(torch.cat((zeros_before, k, zeros_after), dim=-1))
    k = torch.cat(keys, dim=2)
    v = torch.cat([p[3] for p in pieces], dim=2)
    batch = max(p[4].shape[0] for p in pieces)
    mask = torch.cat([p[4].expand(batch, *p[4].shape[1:]) for p in pieces], dim=-1)
    return q, k, v, mask


def _attend(backend, q, k, v, mask, scaling, groups):
    if groups > 1:
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
    if backend == "eager":
        scores = torch.matmul(q, k.transpose(-1, -2)) * scaling
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        return torch.matmul(weights, v)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scaling)


def _as_bool_mask(attention_mask):
    """transformers hands a boolean (True = attend) or additive float 4D mask, or None."""
    if attention_mask is None or attention_mask.dtype == torch.bool:
        return attention_mask
    return attention_mask > torch.finfo(attention_mask.dtype).min / 2


def _block_size(backend, batch, heads, q_len, kv_len) -> int:
    if backend == "eager":
        size = _EAGER_BLOCK_ELEMENTS // max(1, batch * heads * 2 * kv_len)
    else:
        size = min(_SDPA_BLOCK_QUERIES, _SDPA_MASK_ELEMENTS // max(1, batch * 2 * kv_len))
    return max(16, min(q_len, size))
