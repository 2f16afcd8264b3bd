"""One layer's store of completed blocks: keys and values, landmarks included.

A block is rotated anew at the slot it is retrieved into (`slots.py`), so its keys cannot be
stored at their original positions. They are stored rotated by their offset r inside the block:
RoPE composes, R(start + r) = R(start) R(r), so placing a block at any slot is then one rotation
by the slot's start, which the sequence applies to the query instead of to every retrieved key.
The store grows by whole windows; this is the memory that grows with the input,
while what attention reads per window stays `top_k` blocks plus the window.

Keys and values are two planes of one tensor [2, Hkv, n, B, d], read as rows of whole blocks, so
one `index_select` fetches both for every query head (one launch, not the four of advanced
indexing: head and block index tensors, then keys and values apart), and each comes out
contiguous (keys and values interleaved per position made the CPU's batched products 3x slower).
"""

from __future__ import annotations

import math

import torch

from lm_eval_longmem.models.runtime.llama_decoder import rotate


class BlockStore:
    def __init__(self, num_kv_heads: int, block_size: int, head_dim: int, dtype, device):
        self.block_size = block_size
        self.blocks = torch.empty(2, num_kv_heads, 0, block_size, head_dim, dtype=dtype, device=device)
        self._first_rows: dict[int, torch.Tensor] = {}  # per GQA group: each query head's KV head's first row

    @property
    def num_blocks(self) -> int:
        return self.blocks.shape[2]

    @property
    def keys(self) -> torch.Tensor:
        """[Hkv, n, B, d], each rotated by its offset in the block (a view)."""
        return self.blocks[0]

    @property
    def values(self) -> torch.Tensor:
        """[Hkv, n, B, d] (a view)."""
        return self.blocks[1]

    def landmark_keys(self) -> torch.Tensor:
        """[Hkv, n, d] keys of every block's landmark (its last position, so rotated by B - 1)."""
        return self.blocks[0, :, :, -1]

    def append(self, keys: torch.Tensor, values: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
        """Add whole blocks from [Hkv, m * B, d] pre-RoPE keys and values; cos/sin [B, r] are the
        rotations of offsets 0..B-1."""
        shape = (keys.shape[0], -1, self.block_size, keys.shape[-1])
        new = torch.stack([rotate(keys.reshape(shape), cos, sin), values.reshape(shape)])
        self.blocks = torch.cat([self.blocks, new], dim=2)
        self._first_rows.clear()

    def gather(
        self, chosen: torch.Tensor, group: int, into: ReusedBuffer | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values [H, c, k, B, d] (views of one gathered tensor, in `into`'s memory when
        given) of the blocks `chosen [H, c, k]` each query head picked (query head h reads KV head
        h // group)."""
        rows = (self._kv_head_rows(chosen.shape[0], group, chosen.device) + chosen).flatten()
        source = self.blocks.flatten(1, 2)  # [2, Hkv * n, B, d]
        if into is None or source.requires_grad:  # out= does not take part in autograd
            picked = source.index_select(1, rows)
        else:
            picked = torch.index_select(source, 1, rows, out=into.take((2, len(rows), *source.shape[2:]), source))
        keys, values = picked.unflatten(1, chosen.shape)
        return keys, values

    def _kv_head_rows(self, num_heads: int, group: int, device) -> torch.Tensor:
        """[H, 1, 1] row of block 0 of each query head's KV head in the flattened store (kept until
        the store grows)."""
        if group not in self._first_rows:
            heads = torch.arange(num_heads, device=device) // group
            self._first_rows[group] = (heads * self.num_blocks)[:, None, None]
        return self._first_rows[group]

    def nbytes(self) -> int:
        return self.blocks.numel() * self.blocks.element_size()


class ReusedBuffer:
    """Memory for gathered blocks that every layer and piece of one `feed` reuses (each gather is
    used up before the next one; the sequence drops it after the feed, so it is not kept between
    requests). A fresh gather is tens of MB, and the CPU allocator returns
    blocks that large to the system and page-faults them back in on every call: a 42 MB gather took
    25 ms that way, 1 ms into reused memory. On a GPU it saves the caching allocator's calls."""

    def __init__(self):
        self.memory: torch.Tensor | None = None

    def take(self, shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        """A contiguous tensor of `shape` with `like`'s dtype and device (contents undefined)."""
        numel = math.prod(shape)
        if self.memory is None or self.memory.numel() < numel or self.memory.dtype != like.dtype:
            self.memory = torch.empty(numel, dtype=like.dtype, device=like.device)
        return self.memory[:numel].view(shape)
