"""CLEX's training positions: L fractional positions spread over [0, C t'), as the authors sample them.

Training on sequences of L tokens teaches the ODE the frequencies of a longer context C t' by
showing it positions drawn from that longer range: with s = max(1, floor(L / C)),

    u = sorted(first L-2 of a random permutation of 0 .. L t' - 3)
    p_0 = 0,  p_k = (u_k + 1) / s  (k = 1..L-2),  p_{L-1} = floor(L t' / s) - 1.

The first and last positions are pinned, so each sequence spans the whole range; with t' = 1 and
L <= C they are 0..L-1. As the authors wrote it, with s > 1 an inner position can reach
(L t' - 2)/s, up to a step past the pinned last one; kept, it is harmless.
"""

from __future__ import annotations

import torch


def sample_positions(length: int, factor: int, original_length: int, generator=None) -> torch.Tensor:
    """float32 positions [length] for a training sequence of `length` tokens at factor t' = `factor`."""
    if length < 2:
        raise ValueError(f"CLEX samples positions for sequences of at least 2 tokens, got {length}")
    stride = max(1, length // original_length)
    drawn = torch.randperm(length * factor - 2, generator=generator)[: length - 2].sort().values
    inner = (drawn.to(torch.float32) + 1) / stride
    last = torch.tensor([float(length * factor // stride - 1)])
    return torch.cat([torch.zeros(1), inner, last])


def sample_factor(max_factor: int, generator=None) -> int:
    """t' ~ U{1, ..., max_factor}."""
    return int(torch.randint(1, max_factor + 1, (1,), generator=generator).item())
