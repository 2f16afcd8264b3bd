"""Rotary position embedding of the Transformer baselines (`use_rope=True`).

The official layer uses flash-attn's `RotaryEmbedding` with its defaults: non-interleaved
(GPT-NeoX "rotate half": the first and second halves of each head form the pairs),
`inv_freq = base ** (-arange(0, d, 2) / d)` with `base = rope_base`, positions in fp32, cos/sin
tables rounded to the activations' dtype, the rotation computed in fp32. Its `inv_freq` buffer
is not persistent, so nothing here enters the state dict.
"""

from __future__ import annotations

import torch


def apply_rotary(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate `x [B, T, H, D]` by `positions [B, T]` (integer positions, one per token)."""
    head_dim = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, device=x.device, dtype=torch.float32) / head_dim))
    angles = positions.to(device=x.device, dtype=torch.float32)[..., None] * inv_freq
    cos = torch.cos(angles).to(x.dtype).float()[:, :, None, :]
    sin = torch.sin(angles).to(x.dtype).float()[:, :, None, :]
    first, second = x.float().chunk(2, dim=-1)
    rotated = torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)
    return rotated.to(x.dtype)
