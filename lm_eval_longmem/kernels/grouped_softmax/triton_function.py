"""Autograd wrapper that launches the grouped-softmax kernels (imported only when they run)."""

from __future__ import annotations

import torch
import triton

from .triton_kernels import grouped_softmax_backward_kernel, grouped_softmax_forward_kernel


def tile_shape(num_keys: int, block_size: int) -> tuple[int, int]:
    """The [blocks, B] tile one row is loaded as (powers of two)."""
    return triton.next_power_of_2(-(-num_keys // block_size)), triton.next_power_of_2(block_size)


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
            scores, weights, num_queries, num_keys, block_size, NUM_BLOCKS=num_blocks, BLOCK_PAD=block_pad
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
        )
        return grad_scores, None


def triton_grouped_softmax(scores: torch.Tensor, block_size: int) -> torch.Tensor:
    return TritonGroupedSoftmax.apply(scores, block_size)
