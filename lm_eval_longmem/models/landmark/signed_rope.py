"""RoPE in four tensor ops instead of five, for the rotations done every piece and layer.

`llama_decoder.rotate` forms rotate_half(x) = [-x2, x1] with a negation and a concatenation. With
the sign moved into a table made once, signed sin = [-sin1, sin2], the swap of halves is one roll:
x cos + roll(x, r/2) signed_sin. (-a) b and a (-b) are the same float, so the result is
bit-identical to `rotate`'s.
"""

from __future__ import annotations

import torch


def signed_sin(sin: torch.Tensor) -> torch.Tensor:
    """[..., r] sin table with its first half negated."""
    half = sin.shape[-1] // 2
    return torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)


def rotate_signed(x: torch.Tensor, cos: torch.Tensor, sin_signed: torch.Tensor) -> torch.Tensor:
    """`rotate(x, cos, sin)` given `signed_sin(sin)`; partial rotary (r < d) as there."""
    r = cos.shape[-1]
    if r < x.shape[-1]:
        return torch.cat((rotate_signed(x[..., :r], cos, sin_signed), x[..., r:]), dim=-1)
    return x * cos + x.roll(r // 2, dims=-1) * sin_signed
