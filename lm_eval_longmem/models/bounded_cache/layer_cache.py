"""One layer's bounded cache: pre-RoPE keys, values and how many tokens each entry stands for.

Keys are stored *before* RoPE so that an entry can be given a new position whenever the cache
changes (eviction and merging re-index positions inside the cache; see README, "Positions").
`counts[i]` is the number of original tokens entry i represents (stated-CLM eq. 17: its
attention logit gets + log counts[i]); it is 1 for every entry of methods that do not merge.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class LayerCache:
    keys: torch.Tensor  # [Hkv, N, d], before RoPE
    values: torch.Tensor  # [Hkv, N, d]
    counts: torch.Tensor  # [N] float32, tokens per entry

    @classmethod
    def empty(cls, num_kv_heads: int, head_dim: int, dtype: torch.dtype, device) -> LayerCache:
        return cls(
            torch.empty(num_kv_heads, 0, head_dim, dtype=dtype, device=device),
            torch.empty(num_kv_heads, 0, head_dim, dtype=dtype, device=device),
            torch.empty(0, dtype=torch.float32, device=device),
        )

    def __len__(self) -> int:
        return self.keys.shape[1]

    @property
    def log_counts(self) -> torch.Tensor:
        return self.counts.log()

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> LayerCache:
        """New entries (one token each) at the end."""
        ones = torch.ones(keys.shape[1], dtype=torch.float32, device=keys.device)
        return LayerCache(
            torch.cat([self.keys, keys.detach()], dim=1),
            torch.cat([self.values, values.detach()], dim=1),
            torch.cat([self.counts, ones]),
        )

    def take(self, index: torch.Tensor) -> LayerCache:
        """The entries at `index` (sorted positions), in that order."""
        return LayerCache(self.keys[:, index], self.values[:, index], self.counts[index])

    def prefix(self, n: int) -> LayerCache:
        """The first n entries."""
        return LayerCache(self.keys[:, :n], self.values[:, :n], self.counts[:n])

    def detached(self) -> LayerCache:
        return LayerCache(self.keys.detach(), self.values.detach(), self.counts)
