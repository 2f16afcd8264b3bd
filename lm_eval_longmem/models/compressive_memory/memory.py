"""Infini-attention's compressive memory: one associative matrix per key/value head (paper §2.1.2).

Retrieval (eq. 3) reads `A_mem = s(Q) M / (s(Q) z + eps)`; the update folds a whole segment in,
either linearly (eq. 4: `M += s(K)^T V`) or by the delta rule (eq. 5: only what the memory
does not already return for those keys, `M += s(K)^T (V - s(K) M / (s(K) z + eps))`); both add
`sum_t s(K_t)` to z. `s = ELU + 1` keeps every weight positive.

M and z are float32 whatever the model's dtype: they are sums over every token seen, which
overflow half precision (fp16 tops out at 65504) within a few thousand tokens, and bf16's 8-bit
mantissa stops registering new segments once the sums are large. The epsilon keeps the empty
memory (z = 0) at 0 instead of 0/0. Q and K are taken *before* RoPE: the memory has no positions.

GQA: the memory is per key/value head (keys and values are); query head h reads memory
h // (H / H_kv), the grouping attention uses. The update is functional (new tensors, nothing in
place) so a training loop can backpropagate through the memory across segments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F

UpdateRule = Literal["linear", "delta"]
UPDATE_RULES: tuple[str, ...] = ("linear", "delta")
EPSILON = 1e-6


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """s(x) = ELU(x) + 1 in float32 (Katharopoulos et al.; positive, linear for x > 0)."""
    return F.elu(x.float()) + 1.0


@dataclass(frozen=True)
class CompressiveMemory:
    matrix: torch.Tensor  # M [H_kv, d_key, d_value], float32
    normalizer: torch.Tensor  # z [H_kv, d_key], float32
    tokens: int = 0  # how many tokens have been folded in

    @classmethod
    def empty(cls, num_kv_heads: int, key_dim: int, value_dim: int, device=None) -> CompressiveMemory:
        return cls(
            torch.zeros(num_kv_heads, key_dim, value_dim, dtype=torch.float32, device=device),
            torch.zeros(num_kv_heads, key_dim, dtype=torch.float32, device=device),
        )

    @property
    def is_empty(self) -> bool:
        return self.tokens == 0

    def _read(self, features: torch.Tensor) -> torch.Tensor:
        """s(x) M / (s(x) z + eps) for features [H_kv, n, d_key] -> [H_kv, n, d_value]."""
        numerator = features @ self.matrix
        denominator = features @ self.normalizer.unsqueeze(-1)
        return numerator / (denominator + EPSILON)

    def retrieve(self, queries: torch.Tensor) -> torch.Tensor:
        """A_mem [H, n, d_value] (float32) for pre-RoPE queries [H, n, d_key] (eq. 3)."""
        heads, n, key_dim = queries.shape
        kv_heads = self.matrix.shape[0]
        grouped = feature_map(queries).reshape(kv_heads, (heads // kv_heads) * n, key_dim)
        return self._read(grouped).reshape(heads, n, -1)

    def updated(self, keys: torch.Tensor, values: torch.Tensor, rule: UpdateRule) -> CompressiveMemory:
        """The memory after one segment's pre-RoPE keys and values [H_kv, n, d] (eq. 4 or 5)."""
        features = feature_map(keys)
        new_values = values.float()
        if rule == "delta":
            new_values = new_values - self._read(features)
        elif rule != "linear":
            raise ValueError(f"unknown memory update {rule!r}; expected one of {UPDATE_RULES}")
        return CompressiveMemory(
            self.matrix + features.transpose(1, 2) @ new_values,
            self.normalizer + features.sum(dim=1),
            self.tokens + keys.shape[1],
        )
