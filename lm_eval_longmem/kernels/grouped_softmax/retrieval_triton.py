"""Triton kernel of the retrieval attention (`retrieval_attention.py` is its PyTorch reference):
one program per (query, head) reads the query's chosen blocks where they lie in the store, by
index, as paged attention reads pages; nothing is gathered.

The grouped softmax is one flat softmax over items: each visible key of the query's own block
(logit s_j, value v_j), and each earlier block b, of its window or retrieved (logit s_{l_b}, the
landmark's score; value sum_j softmax_j(s_j) v_j, the block's own softmax over its members). An
online softmax merges them one block at a time; the own block goes first, so the running
maximum is finite before a gate that may be -inf (an invalid slot) arrives. Forward only:
scoring runs without gradients; anything that needs them takes the PyTorch path.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _scores(keys, q, scaling, softcap, HAS_CAP: tl.constexpr):
    s = tl.sum(keys * q[None, :], axis=1) * scaling
    if HAS_CAP:  # cap * tanh(s / cap), tanh written with a sigmoid
        s = softcap * (2.0 * tl.sigmoid(2.0 * s / softcap) - 1.0)
    return s


@triton.jit
def _block_item(s, values, cols, BLOCK: tl.constexpr):
    """An earlier block as one item: its landmark's score and its members' softmax-weighted value."""
    member = cols < BLOCK - 1
    top = tl.max(tl.where(member, s, float("-inf")), axis=0)
    e = tl.where(member, tl.exp(s - top), 0.0)
    value = tl.sum((e / tl.sum(e, axis=0))[:, None] * values, axis=0)
    return tl.sum(tl.where(cols == BLOCK - 1, s, 0.0), axis=0), value


@triton.jit
def _merge(m, total, acc, logit, value):
    new = tl.maximum(m, logit)
    keep, add = tl.exp(m - new), tl.exp(logit - new)
    return new, total * keep + add, acc * keep + add * value


@triton.jit
def retrieval_attention_kernel(
    slot_q_ptr,
    window_q_ptr,
    window_k_ptr,
    window_v_ptr,
    store_k_ptr,
    store_v_ptr,
    chosen_ptr,
    valid_ptr,
    out_ptr,
    length,
    num_blocks,
    window,
    scaling,
    softcap,
    K: tl.constexpr,
    BLOCK: tl.constexpr,
    BLOCK_PAD: tl.constexpr,
    DIM: tl.constexpr,
    DIM_PAD: tl.constexpr,
    GROUP: tl.constexpr,
    HAS_CAP: tl.constexpr,
):
    t = tl.program_id(0).to(tl.int64)
    h = tl.program_id(1).to(tl.int64)
    kv_head = h // GROUP
    cols = tl.arange(0, BLOCK_PAD)
    dims = tl.arange(0, DIM_PAD)
    in_dim = dims < DIM
    row = h * length + t
    q = tl.load(window_q_ptr + row * DIM + dims, mask=in_dim, other=0.0).to(tl.float32)
    own_start = t // BLOCK * BLOCK
    # the own block: every non-landmark key up to the query, one item each
    positions = own_start + cols
    visible = (cols < BLOCK - 1) & (positions <= t)
    offsets = (kv_head * length + positions)[:, None] * DIM + dims[None, :]
    mask = visible[:, None] & in_dim[None, :]
    s = _scores(tl.load(window_k_ptr + offsets, mask=mask, other=0.0).to(tl.float32), q, scaling, softcap, HAS_CAP)
    s = tl.where(visible, s, float("-inf"))
    m = tl.max(s, axis=0)
    e = tl.exp(s - m)
    total = tl.sum(e, axis=0)
    acc = tl.sum(e[:, None] * tl.load(window_v_ptr + offsets, mask=mask, other=0.0).to(tl.float32), axis=0)
    # earlier blocks of the window
    in_block = cols < BLOCK
    mask = in_block[:, None] & in_dim[None, :]
    for start in range(t // window * window, own_start, BLOCK):
        offsets = (kv_head * length + start + cols)[:, None] * DIM + dims[None, :]
        keys = tl.load(window_k_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        values = tl.load(window_v_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        gate, value = _block_item(_scores(keys, q, scaling, softcap, HAS_CAP), values, cols, BLOCK)
        m, total, acc = _merge(m, total, acc, gate, value)
    # the retrieved blocks, read from the store by index; an invalid slot's gate is -inf
    for slot in range(K):
        at = row * K + slot
        block = tl.load(chosen_ptr + at)
        slot_q = tl.load(slot_q_ptr + at * DIM + dims, mask=in_dim, other=0.0).to(tl.float32)
        offsets = ((kv_head * num_blocks + block) * BLOCK + cols)[:, None] * DIM + dims[None, :]
        keys = tl.load(store_k_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        values = tl.load(store_v_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        gate, value = _block_item(_scores(keys, slot_q, scaling, softcap, HAS_CAP), values, cols, BLOCK)
        gate = tl.where(tl.load(valid_ptr + at) != 0, gate, float("-inf"))
        m, total, acc = _merge(m, total, acc, gate, value)
    tl.store(out_ptr + row * DIM + dims, (acc / total).to(out_ptr.dtype.element_ty), mask=in_dim)


def triton_retrieval_attention(
    slot_queries,
    window_queries,
    window_keys,
    window_values,
    store_keys,
    store_values,
    chosen,
    slot_valid,
    window,
    scaling,
    softcap,
) -> torch.Tensor:
    heads, length, k, dim = slot_queries.shape
    kv_heads, num_blocks, block_size = store_keys.shape[:3]
    out = torch.empty(heads, length, dim, dtype=window_queries.dtype, device=window_queries.device)
    if num_blocks == 0:  # no slots then (nothing to choose): a valid pointer that is never read
        store_keys = store_values = window_keys.new_zeros(kv_heads, 1, block_size, dim)
    retrieval_attention_kernel[(length, heads)](
        slot_queries.contiguous(),
        window_queries.contiguous(),
        window_keys.contiguous(),
        window_values.contiguous(),
        store_keys.contiguous(),
        store_values.contiguous(),
        chosen.contiguous(),
        slot_valid.to(torch.int8).contiguous(),
        out,
        length,
        store_keys.shape[1],
        window,
        float(scaling),
        float(softcap or 1.0),
        K=k,
        BLOCK=block_size,
        BLOCK_PAD=triton.next_power_of_2(block_size),
        DIM=dim,
        DIM_PAD=triton.next_power_of_2(dim),
        GROUP=heads // kv_heads,
        HAS_CAP=bool(softcap),
    )
    return out
