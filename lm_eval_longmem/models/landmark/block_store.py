"""One layer's store of completed blocks: pre-RoPE keys and values, landmarks included.

Keys are kept before RoPE because a block is rotated anew at the slot it is retrieved into
(`slots.py`). The store grows by whole windows; this is the memory that grows with the input,
while what attention reads per window stays `top_k` blocks plus the window.
"""

from __future__ import annotations

import torch


class BlockStore:
    def __init__(self, num_kv_heads: int, block_size: int, head_dim: int, dtype, device):
        self.block_size = block_size
        self.keys = torch.empty(num_kv_heads, 0, block_size, head_dim, dtype=dtype, device=device)
        self.values = torch.empty_like(self.keys)

    @property
    def num_blocks(self) -> int:
        return self.keys.shape[1]

    def landmark_keys(self) -> torch.Tensor:
        """[Hkv, n, d] pre-RoPE keys of every block's landmark (its last position)."""
        return self.keys[:, :, -1]

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Add whole blocks from [Hkv, m * B, d] keys and values."""
        shape = (keys.shape[0], -1, self.block_size, keys.shape[-1])
        self.keys = torch.cat([self.keys, keys.reshape(shape)], dim=1)
        self.values = torch.cat([self.values, values.reshape(shape)], dim=1)

    def gather(self, chosen: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values [H, c, k, B, d] of the blocks `chosen [H, c, k]` each query head picked
        (query head h reads KV head h // group)."""
        heads = torch.arange(chosen.shape[0], device=chosen.device) // group
        return self.keys[heads[:, None, None], chosen], self.values[heads[:, None, None], chosen]

    def nbytes(self) -> int:
        return self.keys.numel() * self.keys.element_size() * 2
