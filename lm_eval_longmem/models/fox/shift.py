"""Data-dependent token shift of keys/values (FoX (Pro)'s "KV-shift").

Official `ShiftLinear`: `raw_t = W x_t` (submodule `linear`), one mixing weight per head
`alpha_t = sigmoid(w_h . x_t)` (submodule `shift_proj`, no bias), and

    out_t = alpha_t * raw_{t-1} + (1 - alpha_t) * raw_t,

with `raw_{-1} = 0` at the start of a sequence and left-padding positions' `raw` zeroed, so a
sequence's first real token mixes with zero. `alpha` is computed in fp32; the result has `raw`'s
dtype. When decoding, `raw_{t-1}` is the last pre-shift projection kept in the cache.
"""

from __future__ import annotations

import torch
from torch import nn


class ShiftLinear(nn.Module):
    """A linear projection whose output is blended with the previous token's, per head."""

    def __init__(self, input_dim: int, output_dim: int, num_heads: int, bias: bool = False):
        super().__init__()
        if output_dim % num_heads:
            raise ValueError(f"output_dim ({output_dim}) must be a multiple of num_heads ({num_heads})")
        self.num_heads = num_heads
        self.linear = nn.Linear(input_dim, output_dim, bias=bias)
        self.shift_proj = nn.Linear(input_dim, num_heads, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        previous_raw: torch.Tensor | None = None,
        padding: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Shifted projection of `x [B, T, input_dim]` and the pre-shift projection `raw`.

        previous_raw `[B, output_dim]`: `raw` of the token before `x[:, 0]` (None: sequence start).
        padding `[B, T]` bool: left-padding positions, whose `raw` is zeroed.
        """
        raw = self.linear(x)
        if padding is not None:
            raw = raw.masked_fill(padding[..., None], 0.0)
        if previous_raw is None:
            previous_raw = raw.new_zeros(raw.shape[0], raw.shape[-1])
        previous = torch.cat([previous_raw[:, None].to(raw.dtype), raw[:, :-1]], dim=1)
        alpha = torch.sigmoid(self.shift_proj(x).float())[..., None]
        mixed = alpha * previous.unflatten(-1, (self.num_heads, -1)).float()
        mixed = mixed + (1.0 - alpha) * raw.unflatten(-1, (self.num_heads, -1)).float()
        return mixed.flatten(-2).to(raw.dtype), raw
