"""Grouped-query attention's products without copying keys or values per query head.

Query heads h = j * group + g share KV head j, so the [H, c, ...] query-side operand reshapes (a
view) to [Hkv, group * c, ...] and one batched matmul per KV head does what `repeat_interleave`d
keys did, without materialising group copies of them. (The products may round differently from
the per-query-head ones in the last bit: the matmul sees a taller left operand.)
"""

from __future__ import annotations

import torch


def grouped_matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x [H, c, m] @ y [Hkv, m, p] -> [H, c, p], query head h reading KV head h // (H // Hkv)."""
    heads, length = x.shape[:2]
    return (x.reshape(y.shape[0], -1, x.shape[-1]) @ y).view(heads, length, -1)
