"""Which keys each query may see, shared by every backend.

Queries are the last Tq of Tk positions (bottom-right causal alignment), so query i sits at
absolute position ``Tk - Tq + i`` and sees keys ``j <= Tk - Tq + i``. Left padding (``seq_start``)
and packed sequences (``cu_seqlens``) only raise the lowest visible key, so one integer per query,
``key_lo``, describes the whole mask: query i sees keys ``key_lo[b, i] <= j <= Tk - Tq + i``.
The backward pass of a key block needs the converse, ``query_end``: queries ``i < query_end[b, j]``
(and at or after the causal diagonal) are the only ones that may see key j.
"""

from __future__ import annotations

import torch


def _segment_bounds(cu_seqlens: torch.Tensor, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Start and end (exclusive) of the packed sequence each position 0..length-1 belongs to."""
    cu = cu_seqlens.to(torch.long)
    positions = torch.arange(length, device=cu.device)
    segment = torch.searchsorted(cu[1:], positions, right=True).clamp(max=cu.numel() - 2)
    return cu[segment], cu[segment + 1]


def key_window_bounds(
    batch: int,
    num_queries: int,
    num_keys: int,
    seq_start: torch.Tensor | None,
    cu_seqlens: torch.Tensor | None,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """``(key_lo [B, Tq], query_end [B, Tk])`` as int32, or None when plain causal masking suffices."""
    if seq_start is None and cu_seqlens is None:
        return None
    key_lo = torch.zeros(batch, num_queries, dtype=torch.long, device=device)
    query_end = torch.full((batch, num_keys), num_queries, dtype=torch.long, device=device)
    if cu_seqlens is not None:
        starts, ends = _segment_bounds(cu_seqlens.to(device), num_keys)
        key_lo = torch.maximum(key_lo, starts[None, num_keys - num_queries :])
        query_end = torch.minimum(query_end, (ends - (num_keys - num_queries))[None, :])
    if seq_start is not None:
        start = seq_start.to(device=device, dtype=torch.long).reshape(batch, 1)
        key_lo = torch.maximum(key_lo, start)
        before_start = torch.arange(num_keys, device=device)[None, :] < start
        query_end = query_end.masked_fill(before_start, 0)
    return key_lo.to(torch.int32).contiguous(), query_end.to(torch.int32).contiguous()


def visible_keys(
    key_lo: torch.Tensor | None,
    query_rows: range,
    key_cols: range,
    num_queries: int,
    num_keys: int,
    device: torch.device,
) -> torch.Tensor:
    """Boolean ``[B or 1, len(query_rows), len(key_cols)]`` mask of the visible (query, key) pairs."""
    rows = torch.arange(query_rows.start, query_rows.stop, device=device)
    cols = torch.arange(key_cols.start, key_cols.stop, device=device)
    mask = cols[None, :] <= (rows + (num_keys - num_queries))[:, None]
    mask = mask[None]
    if key_lo is not None:
        lo = key_lo[:, query_rows.start : query_rows.stop].to(torch.long)
        mask = mask & (cols[None, None, :] >= lo[:, :, None])
    return mask
