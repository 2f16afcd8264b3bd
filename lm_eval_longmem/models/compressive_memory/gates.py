"""The learned gates that mix memory and local attention, one scalar per query head per layer.

Eq. 6: `A = sigmoid(beta) * A_mem + (1 - sigmoid(beta)) * A_dot`, "a single scalar value as
training parameter per head" — not one per layer (shared across heads) nor one per channel, two
community misreadings. Kept in float32 as a module of their own so that a training loop can give
them their own learning rate and no weight decay (Hugging Face's reproduction saw gates that never
moved from their initial value otherwise).
"""

from __future__ import annotations

import torch
from torch import nn


class MemoryGates(nn.Module):
    def __init__(self, num_layers: int, num_heads: int, beta_init: float, device=None):
        super().__init__()
        self.beta = nn.Parameter(
            torch.full((num_layers, num_heads), float(beta_init), dtype=torch.float32, device=device)
        )

    def mix(self, layer_index: int, memory_read: torch.Tensor, local: torch.Tensor) -> torch.Tensor:
        """Eq. 6 for heads [H, n, d], computed in float32 and returned in the local attention's dtype."""
        gate = torch.sigmoid(self.beta[layer_index]).view(-1, 1, 1)
        return (gate * memory_read + (1 - gate) * local.float()).to(local.dtype)
