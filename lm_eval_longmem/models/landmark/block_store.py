"""One layer's store of completed blocks: keys and values, landmarks included.

A block is rotated anew at the slot it is retrieved into (`slots.py`), so its keys cannot be
stored at their original positions. They are stored rotated by their offset r inside the block:
RoPE composes, R(start + r) = R(start) R(r), so placing a block at any slot is then one rotation
by the slot's start, which the sequence applies to the query instead of to every retrieved key.
The store grows by whole windows; this is the memory that grows with the input,
while what attention reads per window stays `top_k` blocks plus the window.
"""

from __future__ import annotations

import torch

from lm_eval_longmem.models.runtime.llama_decoder import rotate


class BlockStore:
    def __init__(self, num_kv_heads: int, block_size: int, head_dim: int, dtype, device):
        self.block_size = block_size
        self.keys = torch.empty(num_kv_heads, 0, block_size, head_dim, dtype=dtype, device=device)
        self.values = torch.empty_like(self.keys)

    @property
    def num_blocks(self) -> int:
        return self.keys.shape[1]

    def landmark_keys(self) -> torch.Tensor:
        """[Hkv, n, d] keys of every block's landmark (its last position, so rotated by B - 1)."""
        return self.keys[:, :, -1]

    def append(self, keys: torch.Tensor, values: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
        """Add whole blocks from [Hkv, m * B, d] pre-RoPE keys and values; cos/sin [B, r] are the
        rotations of offsets 0..B-1."""
        shape = (keys.shape[0], -1, self.block_size, keys.shape[-1])
        self.keys = torch.cat([self.keys, rotate(keys.reshape(shape), cos, sin)], dim=1)
        self.values = torch.cat([self.values, values.reshape(shape)], dim=1)

    def gather(self, chosen: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values [H, c, k, B, d] of the blocks `chosen [H, c, k]` each query head picked
        (query head h reads KV head h // group)."""
        heads = torch.arange(chosen.shape[0], device=chosen.device) // group
        return self.keys[heads[:, None, None], chosen], self.values[heads[:, None, None], chosen]

    def nbytes(self) -> int:
        return self.keys.numel() * self.keys.element_size() * 2
