"""Triton kernels of the grouped softmax: one program per score row, forward and backward.

A row's keys are loaded as a ``[blocks, B]`` tile (B padded to a power of two, so any block
size works, 51 as well as 64), which turns the per-block reductions into reductions along the
tile's second axis. Rows are short (a landmark model attends over at most its training length
plus a few blocks), so a whole row fits one tile. Forward writes the weights; backward reloads
the scores and recomputes each block's log-sum-exp rather than saving it.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _row_layout(row, num_queries, num_keys, block_size, NUM_BLOCKS: tl.constexpr, BLOCK_PAD: tl.constexpr):
    """Key index of each tile cell and what the cell is for this row's query."""
    position = num_keys - num_queries + row % num_queries
    own = position // block_size
    blocks = tl.arange(0, NUM_BLOCKS)[:, None]
    cols = tl.arange(0, BLOCK_PAD)[None, :]
    keys = blocks * block_size + cols
    in_row = (cols < block_size) & (keys < num_keys)
    is_landmark = cols == block_size - 1
    earlier = in_row & (blocks < own)
    member = earlier & (cols < block_size - 1)  # a non-landmark key of an earlier block
    gate = earlier & is_landmark  # the landmark of an earlier block
    own_key = in_row & (blocks == own) & (keys <= position) & (cols < block_size - 1)
    return keys, in_row, member, gate, own_key


@triton.jit
def _block_logsumexp(s, member):
    """Per-block log-sum-exp of the member scores [NB] (0 for blocks with no members) and the
    within-block softmax of each member."""
    block_max = tl.max(tl.where(member, s, float("-inf")), axis=1)
    block_max = tl.where(block_max == float("-inf"), 0.0, block_max)
    e = tl.where(member, tl.exp(s - block_max[:, None]), 0.0)
    total = tl.sum(e, axis=1)
    safe_total = tl.where(total > 0, total, 1.0)
    return block_max + tl.log(safe_total), e / safe_total[:, None]


@triton.jit
def grouped_softmax_forward_kernel(
    scores_ptr,
    weights_ptr,
    num_queries,
    num_keys,
    block_size,
    NUM_BLOCKS: tl.constexpr,
    BLOCK_PAD: tl.constexpr,
):
    row = tl.program_id(0)
    keys, in_row, member, gate, own_key = _row_layout(row, num_queries, num_keys, block_size, NUM_BLOCKS, BLOCK_PAD)
    base = row.to(tl.int64) * num_keys
    s = tl.load(scores_ptr + base + keys, mask=in_row, other=0.0).to(tl.float32)
    lse, _ = _block_logsumexp(s, member)
    landmark = tl.sum(tl.where(gate, s, 0.0), axis=1)
    logits = tl.where(member, s + (landmark - lse)[:, None], tl.where(own_key, s, float("-inf")))
    row_max = tl.max(tl.max(logits, axis=1), axis=0)
    e = tl.where(member | own_key, tl.exp(logits - row_max), 0.0)
    weights = e / tl.sum(tl.sum(e, axis=1), axis=0)
    tl.store(weights_ptr + base + keys, weights.to(weights_ptr.dtype.element_ty), mask=in_row)


@triton.jit
def grouped_softmax_backward_kernel(
    scores_ptr,
    weights_ptr,
    grad_weights_ptr,
    grad_scores_ptr,
    num_queries,
    num_keys,
    block_size,
    NUM_BLOCKS: tl.constexpr,
    BLOCK_PAD: tl.constexpr,
):
    """ds from dw: du = w (dw - sum w dw) for the flat softmax over u = s + beta; a member j of
    block b adds through beta_b = s_l - lse_b: ds_j = du_j - q_j G_b and ds_l = G_b, where
    G_b = sum_{j in b} du_j and q_j is the block's own softmax."""
    row = tl.program_id(0)
    keys, in_row, member, gate, own_key = _row_layout(row, num_queries, num_keys, block_size, NUM_BLOCKS, BLOCK_PAD)
    base = row.to(tl.int64) * num_keys
    s = tl.load(scores_ptr + base + keys, mask=in_row, other=0.0).to(tl.float32)
    w = tl.load(weights_ptr + base + keys, mask=in_row, other=0.0).to(tl.float32)
    dw = tl.load(grad_weights_ptr + base + keys, mask=in_row, other=0.0).to(tl.float32)
    _, inside = _block_logsumexp(s, member)
    du = w * (dw - tl.sum(tl.sum(w * dw, axis=1), axis=0))
    du = tl.where(member | own_key, du, 0.0)
    block_grad = tl.sum(tl.where(member, du, 0.0), axis=1)[:, None]
    ds = tl.where(member, du - inside * block_grad, tl.where(gate, block_grad, du))
    tl.store(grad_scores_ptr + base + keys, ds.to(grad_scores_ptr.dtype.element_ty), mask=in_row)
