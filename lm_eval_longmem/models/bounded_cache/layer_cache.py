"""One layer's bounded cache: pre-RoPE keys, values and how many tokens each entry stands for.

Keys are stored *before* RoPE so that an entry can be given a new position whenever the cache
changes (eviction and merging re-index positions inside the cache; see docs/methods/bounded-caches.md, "Positions").
`counts[i]` is the number of original tokens entry i represents (stated-CLM eq. 17: its
attention logit gets + log counts[i]); it is 1 for every entry of methods that do not merge.
`rotated` memoizes the keys rotated at positions 0..N-1 while those positions hold (decoding
appends without moving anything), so a decoding step rotates one key, not the whole cache.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lm_eval_longmem.models.runtime.llama_decoder import rotate


@dataclass
class LayerCache:
    keys: torch.Tensor  # [Hkv, N, d], before RoPE
    values: torch.Tensor  # [Hkv, N, d]
    counts: torch.Tensor  # [N] float32, tokens per entry
    rotated: torch.Tensor | None = None  # keys at positions 0..N-1, when known

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

    def _differentiable(self) -> bool:
        return torch.is_grad_enabled() and self.keys.requires_grad

    def rotated_keys(self, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Keys with RoPE at positions 0..N-1 (cos/sin cover at least N positions)."""
        if self.rotated is not None and not self._differentiable():
            return self.rotated
        rotated = rotate(self.keys, cos[: len(self)], sin[: len(self)])
        if not self._differentiable():
            self.rotated = rotated
        return rotated

    def extend(self, keys: torch.Tensor, values: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> LayerCache:
        """This cache followed by new single-token entries (not detached: attention reads it)."""
        n, c = len(self), keys.shape[1]
        rotated = None
        if self.rotated is not None and not self._differentiable():
            rotated = torch.cat([self.rotated, rotate(keys, cos[n : n + c], sin[n : n + c])], dim=1)
        ones = torch.ones(c, dtype=torch.float32, device=keys.device)
        return LayerCache(
            torch.cat([self.keys, keys], dim=1),
            torch.cat([self.values, values], dim=1),
            torch.cat([self.counts, ones]),
            rotated,
        )

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> LayerCache:
        """New entries (one token each) at the end, stored."""
        ones = torch.ones(keys.shape[1], dtype=torch.float32, device=keys.device)
        return LayerCache(
            torch.cat([self.keys, keys.detach()], dim=1),
            torch.cat([self.values, values.detach()], dim=1),
            torch.cat([self.counts, ones]),
        )

    def take(self, index: torch.Tensor) -> LayerCache:
        """The entries at `index` (sorted positions), in that order."""
        return LayerCache(self.keys[:, index], self.values[:, index], self.counts[index])

    def without(self, start: int, stop: int) -> LayerCache:
        """The entries outside [start, stop), in order: two slices and one copy per tensor, where
        `take` would build an index and gather through it."""

        def cut(x: torch.Tensor, dim: int) -> torch.Tensor:
            return torch.cat([x.narrow(dim, 0, start), x.narrow(dim, stop, x.shape[dim] - stop)], dim=dim)

        return LayerCache(cut(self.keys, 1), cut(self.values, 1), cut(self.counts, 0))

    def prefix(self, n: int) -> LayerCache:
        """The first n entries (their positions do not move)."""
        rotated = self.rotated[:, :n] if self.rotated is not None else None
        return LayerCache(self.keys[:, :n], self.values[:, :n], self.counts[:n], rotated)

    def detached(self) -> LayerCache:
        rotated = self.rotated.detach() if self.rotated is not None else None
        return LayerCache(self.keys.detach(), self.values.detach(), self.counts, rotated)
