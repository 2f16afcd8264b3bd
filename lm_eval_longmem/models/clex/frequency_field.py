"""CLEX's vector field: how the log-frequencies of RoPE move as the length factor t grows.

State z(t) in R^{d/2} (d: the rotated dims of a head), z(1) = ln theta with theta the model's own
inverse frequencies. With the time embedding xi(t), the log-frequencies NTK-aware scaling with
factor 2t-1 would give,

    xi_j(t)  = ln[ b^(-2j/d) (2t-1)^(-2j/(d-2)) ],   xi'_j(t) = -4j / ((d-2)(2t-1)),
    dz/dt    = act((z + xi(t)) U) D + xi'(t),

with U [d/2, lambda*d] and D [lambda*d, d/2] the trained parameters (lambda = param_factor). D
starts at zero, so an untrained field is xi'(t) alone and exp(z(t)) is NTK with factor 2t-1.
The base b of the time embedding is 10000 whatever the model's rope_theta: the released code
hard-wires it, and released checkpoints were trained with it.

The parameter names (`ode_up_proj`, `ode_down_proj`) are those of the authors' checkpoints.
"""

from __future__ import annotations

import math

import torch
from torch import nn

TIME_EMBEDDING_BASE = 10000.0
ACTIVATIONS = {"silu": nn.SiLU, "tanh": nn.Tanh}


class ClexFrequencyField(nn.Module):
    def __init__(self, rotary_dim: int, param_factor: int, act: str):
        super().__init__()
        if act not in ACTIVATIONS:
            raise ValueError(f"act must be one of {sorted(ACTIVATIONS)}, got {act!r}")
        if rotary_dim < 4 or rotary_dim % 2:
            raise ValueError(f"CLEX needs an even rotary dimension of at least 4, got {rotary_dim}")
        self.rotary_dim = rotary_dim
        self.ode_up_proj = nn.Parameter(torch.empty(rotary_dim // 2, param_factor * rotary_dim))
        self.ode_down_proj = nn.Parameter(torch.empty(param_factor * rotary_dim, rotary_dim // 2))
        self.act = ACTIVATIONS[act]()
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The authors' initialisation: U as nn.Linear's default, D zero (the field starts as NTK's)."""
        nn.init.kaiming_uniform_(self.ode_up_proj, a=math.sqrt(5))
        nn.init.zeros_(self.ode_down_proj)

    def time_embedding(self, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(xi(t), xi'(t)), each of shape [d/2], in float32."""
        d = self.rotary_dim
        alpha = torch.clamp(2 * t.to(torch.float32) - 1, min=1.0)
        index = torch.arange(0, d, 2, dtype=torch.float32, device=t.device)  # 2j
        xi = -(index / d) * math.log(TIME_EMBEDDING_BASE) - (index / (d - 2)) * torch.log(alpha)
        xi_rate = -2 * index / ((d - 2) * alpha)
        return xi, xi_rate

    def forward(self, t: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        xi, xi_rate = self.time_embedding(t)
        return self.act((z + xi) @ self.ode_up_proj.float()) @ self.ode_down_proj.float() + xi_rate

    def untrained(self) -> bool:
        """Whether D is all zero: the field is NTK with factor 2t-1, whatever U holds."""
        return not bool(self.ode_down_proj.detach().any())
