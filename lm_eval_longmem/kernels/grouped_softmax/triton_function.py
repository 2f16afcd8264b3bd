"""Autograd wrapper that launches the grouped-softmax kernels (imported only when they run)."""

from __future__ import annotations

import torch
import triton

from .triton_kernels import grouped_softmax_backward_kernel, grouped_softmax_forward_kernel


def tile_shape(num_keys: int, block_size: int) -> tuple[int, int]:
    """The [blocks, B] tile one row is loaded as (powers of two)."""
    return triton.next_power_of_2(-(-num_keys // block_size)), triton.next_power_of_2(block_size)


def launch_warps(num_blocks: int, block_pad: int, block_size: int) -> int:
    """Warps per row, 4 to 16: one per 1,024 tile cells (a thread holds at most 32), or one per 256
    cells where the block size is not a multiple of 16 (no vector loads: every cell keeps its own
    64-bit address, twice the registers).

    Compiled ahead of time (benchmarks/kernel_resources.py), Triton's default of 4 warps held the
    longest row (256x64, 128 cells a thread) at 255 registers with 232-632 B of spills, and the fp32
    backward fell to 32 registers with 4 KB of stack; at 16 warps it needs 79-128 and spills none.
    Blocks of 51 (32x64 tiles) spilled 8 B on sm_80 at 4 warps, none at 8."""
    cells_per_warp = 1024 if block_size % 16 == 0 else 256
    return min(16, max(4, num_blocks * block_pad // cells_per_warp))


class TritonGroupedSoftmax(torch.autograd.Function):
    """Saves the scores and the weights; the backward recomputes the per-block log-sum-exp."""

    @staticmethod
    def forward(ctx, scores: torch.Tensor, block_size: int) -> torch.Tensor:
        scores = scores.contiguous()
        num_queries, num_keys = scores.shape[-2:]
        weights = torch.empty_like(scores)
        rows = scores.numel() // num_keys
        num_blocks, block_pad = tile_shape(num_keys, block_size)
        grouped_softmax_forward_kernel[(rows,)](
            scores,
            weights,
            num_queries,
            num_keys,
            block_size,
            NUM_BLOCKS=num_blocks,
            BLOCK_PAD=block_pad,
            num_warps=launch_warps(num_blocks, block_pad, block_size),
        )
        ctx.save_for_backward(scores, weights)
        ctx.block_size = block_size
        return weights

    @staticmethod
    def backward(ctx, grad_weights: torch.Tensor):
        scores, weights = ctx.saved_tensors
        grad_weights = grad_weights.contiguous()
        num_queries, num_keys = scores.shape[-2:]
        grad_scores = torch.empty_like(scores)
        num_blocks, block_pad = tile_shape(num_keys, ctx.block_size)
        grouped_softmax_backward_kernel[(scores.numel() // num_keys,)](
            scores,
            weights,
            grad_weights,
            grad_scores,
            num_queries,
            num_keys,
            ctx.block_size,
            NUM_BLOCKS=num_blocks,
            BLOCK_PAD=block_pad,
            num_warps=launch_warps(num_blocks, block_pad, ctx.block_size),
        )
        return grad_scores, None


def triton_grouped_softmax(scores: torch.Tensor, block_size: int) -> torch.Tensor:
    return TritonGroupedSoftmax.apply(scores, block_size)
