"""The two-part attention as a few FlashAttention calls (CUDA, half precision, no padding).

Every part of both rules is a union of distance bands: Self-Extend's neighbour part is the
keys at distance 0..M and its grouped part those at M+1 and beyond; LM-Infinite's parts are
its local window (true distance up to C, clamped beyond) plus its G global tokens. A band of
distances over a run of queries is exactly FlashAttention's causal mask aligned to the bottom
right with a left window, so each band is one fused kernel call over all queries: no mask is
built, blocks outside the band are never computed, grouped-query heads are read as they are,
and the kernel returns the log-sum-exp that merges the pieces into one softmax. The global
tokens are few (10 by default) and are scored directly.

`part_attention.py` stays the general path (any mask, left padding, fp32, eager, the CPU);
the tests hold the two against each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lm_eval_longmem.models.attention.part_attention import explicit_attention, merge_partials, positions

_FLASH = getattr(torch.ops.aten, "_flash_attention_forward", None)
_FLASH_DTYPES = (torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class Band:
    """Every key at distance lo..hi from its query (hi None: no limit), scored as `part`."""

    part: int
    lo: int
    hi: int | None


@dataclass(frozen=True)
class GlobalKeys:
    """The keys at positions < count, at distance lo..hi from their query, scored as `part`."""

    part: int
    count: int
    lo: int
    hi: int | None


def band_kernel_applies(query: torch.Tensor, attention_mask) -> bool:
    """FlashAttention takes this call: CUDA, fp16/bf16, a head size it supports, no padding mask."""
    return (
        _FLASH is not None
        and attention_mask is None
        and query.is_cuda
        and query.dtype in _FLASH_DTYPES
        and query.shape[-1] <= 256
        and query.shape[-1] % 8 == 0
    )


def band_attention(rule, query, key, value, scaling: float, position_ids, inv_freq) -> torch.Tensor:
    """Attention output (batch, q_len, heads, head_dim) for `rule`, from its `pieces()`.

    Nothing here waits for the GPU (no value is read back), so small models are not held up
    by synchronisation."""
    batch, _, q_len, _ = query.shape
    kv_len = key.shape[2]
    offset = kv_len - q_len
    query_pos, key_pos = positions(position_ids, batch, q_len, kv_len, query.device)
    pieces = rule.pieces()
    # keys each part reads: all of them for a band, only the first few for global keys alone
    needed = {}
    for piece in pieces:
        reach = kv_len if isinstance(piece, Band) else min(piece.count, kv_len)
        needed[piece.part] = max(needed.get(piece.part, 0), reach)
    forms = {
        part: rule.forms(part, query, key[:, :, :n], query_pos, key_pos[:, :n], inv_freq) for part, n in needed.items()
    }
    partials = []
    for piece in pieces:
        q, k = forms[piece.part]
        if isinstance(piece, Band):
            result = _band(piece, q, k, value, scaling, offset)
        else:
            result = _global_keys(piece, q, k, value, scaling, offset, key_pos)
        if result is not None:
            partials.append(result)
    output = merge_partials(partials)
    return output.transpose(1, 2).contiguous()


def _band(piece: Band, q, k, v, scaling, offset):
    """(output, lse) over all queries; queries with no key in the band get 0 and -inf."""
    q_len = q.shape[2]
    first = max(offset, piece.lo)  # KV index of the first query with a key in the band
    end = offset + q_len
    if first >= end:
        return None
    k_start = 0 if piece.hi is None else max(0, first - piece.hi)
    k_end = end - piece.lo
    # Query i (KV index first + i) against key j (index k_start + j): allowed iff
    # j <= i + (K - Q) (distance >= lo) and j >= i + (K - Q) - (hi - lo) (distance <= hi):
    # FlashAttention's bottom-right causal mask with a left window of hi - lo.
    out, lse = _FLASH(
        q[:, :, first - offset :].transpose(1, 2),
        k[:, :, k_start:k_end].transpose(1, 2),
        v[:, :, k_start:k_end].transpose(1, 2),
        None,
        None,
        end - first,
        k_end - k_start,
        0.0,
        True,
        False,
        scale=scaling,
        window_size_left=-1 if piece.hi is None else piece.hi - piece.lo,
        window_size_right=0,
    )[:2]
    if first == offset:
        return out.transpose(1, 2), lse.float()
    full_out = q.new_zeros(q.shape[0], q.shape[1], q_len, v.shape[-1])
    full_lse = torch.full((q.shape[0], q.shape[1], q_len), float("-inf"), device=q.device)
    full_out[:, :, first - offset :] = out.transpose(1, 2)
    full_lse[:, :, first - offset :] = lse.float()
    return full_out, full_lse


def _global_keys(piece: GlobalKeys, q, k, v, scaling, offset, key_pos):
    """Scores of the few global keys written out; rows with none allowed come back as 0, -inf."""
    count = min(piece.count, k.shape[2])  # a part with a band too has every key rotated: take the first few
    if count == 0 or offset + q.shape[2] - 1 < piece.lo:
        return None
    query_index = torch.arange(offset, offset + q.shape[2], device=q.device)
    distance = query_index[:, None] - torch.arange(count, device=q.device)[None, :]
    mask = (distance >= max(0, piece.lo)) & (key_pos[:, None, None, :count] < piece.count)
    if piece.hi is not None:
        mask &= distance <= piece.hi
    return explicit_attention(q, k[:, :, :count], v[:, :, :count], mask, scaling, q.shape[1] // k.shape[1])
