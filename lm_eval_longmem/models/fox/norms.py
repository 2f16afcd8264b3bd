"""RMS norms of FoX, in plain PyTorch with the parameter names of the official (fla-derived) ones.

The official code uses Triton kernels (`RMSNorm`, `GroupNorm(is_rms_norm=True)`,
`FusedGroupNormGated`); each holds a single `weight` (no bias) and normalises in fp32, returning
the input's dtype. A "group" there is one attention head, so the grouped norms are per-head RMS
norms with a separate scale for every channel.
"""

from __future__ import annotations

import torch
from torch import nn


def rms_normalize(x: torch.Tensor, eps: float) -> torch.Tensor:
    """x / rms(x) over the last dimension, in fp32."""
    x = x.float()
    return x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps)


class RMSNorm(nn.Module):
    """RMS norm over the last dimension with a learned scale `weight`."""

    def __init__(self, hidden_size: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (rms_normalize(x, self.eps) * self.weight.float()).to(x.dtype)

    def add_and_normalize(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(norm(x + residual), x + residual): the pre-norm residual step the official block fuses.

        The sum is formed in fp32 and normalised from there; the residual stream keeps its dtype.
        """
        total = x.float() + residual.float()
        normalized = (rms_normalize(total, self.eps) * self.weight.float()).to(x.dtype)
        return normalized, total.to(residual.dtype)


class HeadwiseRMSNorm(nn.Module):
    """RMS norm of each head's slice of a `[..., heads * head_dim]` vector (official: an RMS
    `GroupNorm` with one group per head), optionally multiplied by `sigmoid(gate)` afterwards
    (official: `FusedGroupNormGated(activation="sigmoid")`, FoX (Pro)'s output norm + gate)."""

    def __init__(self, num_heads: int, hidden_size: int, eps: float = 1e-5):
        super().__init__()
        self.num_heads = num_heads
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x: torch.Tensor, gate: torch.Tensor | None = None) -> torch.Tensor:
        per_head = x.unflatten(-1, (self.num_heads, -1))
        normalized = rms_normalize(per_head, self.eps).flatten(-2) * self.weight.float()
        if gate is not None:
            normalized = normalized * torch.sigmoid(gate.float())
        return normalized.to(x.dtype)
