"""Positions of retrieved blocks, as the official code places them (`llama/llama_mem.py`).

With n cached blocks, k = min(top_k, n) retrieved and `full = n * B` cached tokens, the slot area
starts at `prefix = full - (k + 1) B`, just before the current window:

* landmark keys are scored at `prefix + m_b B + B - 1`, where `m_b` is 0 for every block but the
  last k, which get 1..k: older blocks share one position, the most recent keep their own;
* the chosen blocks (sorted by index) go to slots s = 0..k-1 at `prefix + s B + r`, one block later
  when the block is one of the last k (`+ B`), so every distance to the window stays within the
  training length.

Positions here are the official absolute ones; the sequence shifts them all by one constant before
rotating (RoPE sees only differences).
"""

from __future__ import annotations

import torch


def slot_origin(num_blocks: int, top_k: int, block_size: int) -> int:
    """`prefix`: where the slot area starts (may be negative while fewer than top_k + 1 blocks exist)."""
    return (num_blocks - min(top_k, num_blocks) - 1) * block_size


def landmark_score_positions(num_blocks: int, top_k: int, block_size: int, device=None) -> torch.Tensor:
    """[n] positions at which each cached block's landmark key is scored."""
    k = min(top_k, num_blocks)
    slot = torch.cat(
        [torch.zeros(num_blocks - k, dtype=torch.long, device=device), torch.arange(1, k + 1, device=device)]
    )
    return slot * block_size + block_size - 1 + slot_origin(num_blocks, top_k, block_size)


def slot_steps(chosen: torch.Tensor, num_blocks: int, top_k: int) -> torch.Tensor:
    """[..., k] start of each chosen block `chosen [..., k]` (sorted indices) in blocks after the slot
    origin: its slot s, plus one for the last k blocks. Only k + 1 values (0..k), so the sequence
    rotates each query once per value and picks, rather than rotating per chosen block."""
    slots = torch.arange(chosen.shape[-1], device=chosen.device)
    return slots + (chosen >= num_blocks - min(top_k, num_blocks))


def chosen_block_starts(chosen: torch.Tensor, num_blocks: int, top_k: int, block_size: int) -> torch.Tensor:
    """[..., k] position of the first key of each chosen block `chosen [..., k]` (sorted indices)."""
    return slot_origin(num_blocks, top_k, block_size) + slot_steps(chosen, num_blocks, top_k) * block_size


def chosen_block_positions(chosen: torch.Tensor, num_blocks: int, top_k: int, block_size: int) -> torch.Tensor:
    """[..., k, B] positions of the keys of the chosen blocks `chosen [..., k]` (sorted indices)."""
    within = torch.arange(block_size, device=chosen.device)
    return chosen_block_starts(chosen, num_blocks, top_k, block_size)[..., None] + within
