"""The Triton path: FlashAttention-2 forward and backward with per-query and per-key additive
biases, and the autograd function that launches them (imported only when the Triton path runs).

Forward: one program owns a block of queries of one query head and walks the key blocks it can
see: below the causal diagonal without masks, the diagonal (and, with left padding or packed
sequences, every block from the block's lowest visible key on) with masks. Blocks above the
diagonal or before the lowest visible key are never touched. It writes the output and the base-2
log-sum-exp the backward kernels recompute probabilities from (+inf for rows with no keys); for
a few queries against many keys it splits the keys across programs (``decoding.py``).

Backward (FlashAttention-2 split): with ``P = exp(S - lse)`` recomputed per block and
``delta_i = sum_d dO_i * O_i``: ``dS = P * (dO V^T - delta)``, ``dq = scale * dS K``,
``dk = scale * dS^T Q``, ``dv = P^T dO``, ``d k_bias_j = -sum_i dS_ij`` and
``d q_bias_i = sum_j dS_ij``. The query-bias gradient is zero in exact arithmetic (a per-row
shift leaves a softmax unchanged) but is computed all the same: it carries each row's rounding of
delta with the opposite sign of the key-bias gradient, so when both biases are one tensor (FoX's
c) the roundings cancel instead of adding up. The dq kernel walks key blocks for a query block,
as the forward does; the dk/dv kernel walks query blocks for a key block and sums the query heads
that share its kv head (GQA) in registers.

Logits and the saved log-sum-exp live in base 2 inside the kernels (``exp2`` is the cheap
instruction). The biases are subtracted from each other before they meet the scores
(``biased_scores``): FoX's cumulative log-gates grow linearly with the position, and adding
``a_i`` and ``b_j`` one after the other would round the scores at that magnitude rather than at
the size of ``a_i - b_j``.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from .block_configs import block_configs, shared_memory_pruner
from .common import keeps_fp32_output
from .decoding import DECODE_MAX_QUERIES, key_splits, merge_split_outputs_triton, split_length

LOG2E = tl.constexpr(1.4426950408889634)
LOG2E_HOST = 1.4426950408889634

# fp32 inputs multiply in IEEE fp32, never silently in TF32 (the official FoX kernel does the
# same); fp16/bf16 inputs use the tensor cores either way.
DOT_PRECISION = tl.constexpr("ieee")

_DELTA_BLOCK = 64


# What every kernel shares: the biased scores and the key range of a query block.


@triton.jit
def dot(a, b):
    return tl.dot(a, b, input_precision=DOT_PRECISION)


@triton.jit
def biased_scores(q, k_t, q_bias, k_bias, scale_log2):
    """Base-2 logits ``(q.k * scale + a_i - b_j) * log2(e)`` of a ``[M, N]`` block (raw fp32 biases)."""
    return dot(q, k_t) * scale_log2 + (q_bias[:, None] - k_bias[None, :]) * LOG2E


@triton.jit
def load_key_lo(key_lo_row, rows, row_ok, num_keys, BLOCK_M: tl.constexpr, HAS_WINDOW: tl.constexpr):
    """Lowest visible key per query row (0 without a window; ``num_keys`` for rows past the end)."""
    if HAS_WINDOW:
        key_lo = tl.load(key_lo_row + rows, mask=row_ok, other=num_keys)
    else:
        key_lo = tl.zeros([BLOCK_M], dtype=tl.int32)
    return key_lo


@triton.jit
def key_range(first_row, num_rows, num_queries, num_keys, key_lo, BLOCK_N: tl.constexpr, HAS_WINDOW: tl.constexpr):
    """``(start, unmasked_stop, stop)`` of the key loop of one query block (multiples of BLOCK_N
    except ``stop``): keys in ``[start, unmasked_stop)`` are visible to every row of the block."""
    offset = num_keys - num_queries
    last_row = tl.minimum(first_row + num_rows, num_queries) - 1
    stop = last_row + offset + 1
    if HAS_WINDOW:
        start = (tl.min(key_lo, 0) // BLOCK_N) * BLOCK_N
        unmasked_stop = start
    else:
        start = 0
        unmasked_stop = ((first_row + offset + 1) // BLOCK_N) * BLOCK_N
    return start, unmasked_stop, stop


@triton.jit
def split_key_range(start, unmasked_stop, stop, split_lo, split_hi):
    """The part of a key loop ``key_range`` gave that lies in ``[split_lo, split_hi)`` (both
    multiples of BLOCK_N): one program's share when the keys are split across programs."""
    new_start = tl.maximum(start, split_lo)
    new_stop = tl.minimum(stop, split_hi)
    new_unmasked_stop = tl.maximum(tl.minimum(unmasked_stop, new_stop), new_start)
    return new_start, new_unmasked_stop, new_stop


# The forward kernel.


@triton.jit
def _attend_key_block(
    acc,
    row_sum,
    row_max,
    q,
    q_bias,
    positions,
    key_lo,
    k_base,
    v_base,
    kb_base,
    stride_kt,
    stride_vt,
    stride_kbt,
    start,
    num_keys,
    scale_log2,
    HEAD_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
    MASKED: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
):
    cols = start + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    col_ok = cols < num_keys
    k_t = tl.load(k_base + cols[None, :] * stride_kt + dims[:, None], mask=col_ok[None, :], other=0.0)
    k_bias = tl.load(kb_base + cols * stride_kbt, mask=col_ok, other=0.0)
    scores = biased_scores(q, k_t, q_bias, k_bias, scale_log2)
    if MASKED:
        visible = cols[None, :] <= positions[:, None]
        if HAS_WINDOW:
            visible = visible & (cols[None, :] >= key_lo[:, None])
        scores = tl.where(visible, scores, float("-inf"))
    new_max = tl.maximum(row_max, tl.max(scores, 1))
    probs = tl.math.exp2(scores - new_max[:, None])
    rescale = tl.math.exp2(row_max - new_max)
    row_sum = row_sum * rescale + tl.sum(probs, 1)
    v = tl.load(v_base + cols[:, None] * stride_vt + dims[None, :], mask=col_ok[:, None], other=0.0)
    acc = acc * rescale[:, None] + dot(probs.to(v.dtype), v)
    return acc, row_sum, new_max


def forward_shared_bytes(block_m, block_n, head_dim, stages, elem):
    """Estimated shared memory: the query tile once, the key and value tiles once per pipeline
    stage (held against the compiled figures in docs/kernels.md's table)."""
    return elem * head_dim * (block_m + stages * 2 * block_n) + 1024


@triton.autotune(
    configs=block_configs(
        [(128, 64, 4, 3), (128, 64, 8, 3), (64, 64, 4, 3), (128, 32, 4, 3)],
        [(64, 32, 8, 2, 64), (32, 32, 4, 1, 64), (32, 16, 4, 1)],
        (32, 16, 4, 1),
        decode_choices=[(16, 64, 4, 2), (16, 128, 4, 2, 64), (16, 32, 4, 1)],
    ),
    key=["HEAD_DIM", "HAS_WINDOW", "DECODE"],
    prune_configs_by={"early_config_prune": shared_memory_pruner(forward_shared_bytes)},
)
@triton.jit
def biased_attention_forward_kernel(
    Q,
    K,
    V,
    QB,
    KB,
    KEY_LO,
    OUT,
    LSE,
    stride_qb,
    stride_qt,
    stride_qh,
    stride_kb,
    stride_kt,
    stride_kh,
    stride_vb,
    stride_vt,
    stride_vh,
    stride_ob,
    stride_ot,
    stride_oh,
    stride_qbb,
    stride_qbt,
    stride_kbb,
    stride_kbt,
    num_queries,
    num_keys,
    q_heads,
    group,
    scale_log2,
    split_len,
    stride_os,
    stride_ls,
    HEAD_DIM: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    DECODE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """Grid ``(query blocks, batch x heads, key splits)``. With one split (``split_len`` >=
    ``num_keys``) it writes the output and log-sum-exp; with several, each program attends to
    its ``split_len`` keys and writes its partial normalised output and log-sum-exp at
    ``split * stride_os`` / ``split * stride_ls``, merged afterwards (flash-decoding)."""
    block_id = tl.program_id(0)
    batch_head = tl.program_id(1)
    split = tl.program_id(2)
    b = (batch_head // q_heads).to(tl.int64)
    head = batch_head % q_heads
    kv_head = head // group
    first_row = block_id * BLOCK_M
    rows = first_row + tl.arange(0, BLOCK_M)
    row_ok = rows < num_queries
    dims = tl.arange(0, HEAD_DIM)
    positions = rows + (num_keys - num_queries)

    q = tl.load(
        Q + b * stride_qb + head * stride_qh + rows[:, None] * stride_qt + dims[None, :],
        mask=row_ok[:, None],
        other=0.0,
    )
    q_bias = tl.load(QB + b * stride_qbb + rows * stride_qbt + head, mask=row_ok, other=0.0)
    key_lo = load_key_lo(KEY_LO + b * num_queries, rows, row_ok, num_keys, BLOCK_M, HAS_WINDOW)
    k_base = K + b * stride_kb + kv_head * stride_kh
    v_base = V + b * stride_vb + kv_head * stride_vh
    kb_base = KB + b * stride_kbb + head

    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    row_max = tl.full([BLOCK_M], -1.0e30, dtype=tl.float32)
    start, unmasked_stop, stop = key_range(first_row, BLOCK_M, num_queries, num_keys, key_lo, BLOCK_N, HAS_WINDOW)
    start, unmasked_stop, stop = split_key_range(start, unmasked_stop, stop, split * split_len, (split + 1) * split_len)
    for key_start in range(start, unmasked_stop, BLOCK_N):
        acc, row_sum, row_max = _attend_key_block(
            acc,
            row_sum,
            row_max,
            q,
            q_bias,
            positions,
            key_lo,
            k_base,
            v_base,
            kb_base,
            stride_kt,
            stride_vt,
            stride_kbt,
            key_start,
            num_keys,
            scale_log2,
            HEAD_DIM,
            BLOCK_N,
            False,
            HAS_WINDOW,
        )
    for key_start in range(unmasked_stop, stop, BLOCK_N):
        acc, row_sum, row_max = _attend_key_block(
            acc,
            row_sum,
            row_max,
            q,
            q_bias,
            positions,
            key_lo,
            k_base,
            v_base,
            kb_base,
            stride_kt,
            stride_vt,
            stride_kbt,
            key_start,
            num_keys,
            scale_log2,
            HEAD_DIM,
            BLOCK_N,
            True,
            HAS_WINDOW,
        )

    empty = row_sum == 0.0
    safe_sum = tl.where(empty, 1.0, row_sum)
    out = acc / safe_sum[:, None]
    tl.store(
        OUT + split * stride_os + b * stride_ob + head * stride_oh + rows[:, None] * stride_ot + dims[None, :],
        out.to(OUT.dtype.element_ty),
        mask=row_ok[:, None],
    )
    lse = tl.where(empty, float("inf"), row_max + tl.math.log2(safe_sum))
    tl.store(LSE + split * stride_ls + batch_head.to(tl.int64) * num_queries + rows, lse, mask=row_ok)


# The backward kernels.


@triton.jit
def output_dot_grad_kernel(
    OUT, DO, DELTA, stride_b, stride_t, stride_h, num_queries, q_heads, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr
):
    """``delta[b, h, i] = sum_d OUT * DO`` in fp32 (OUT and DO share strides)."""
    batch_head = tl.program_id(1)
    b = (batch_head // q_heads).to(tl.int64)
    head = batch_head % q_heads
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < num_queries
    offsets = b * stride_b + head * stride_h + rows[:, None] * stride_t + tl.arange(0, HEAD_DIM)[None, :]
    out = tl.load(OUT + offsets, mask=row_ok[:, None], other=0.0).to(tl.float32)
    grad = tl.load(DO + offsets, mask=row_ok[:, None], other=0.0).to(tl.float32)
    tl.store(DELTA + batch_head.to(tl.int64) * num_queries + rows, tl.sum(out * grad, 1), mask=row_ok)


@triton.jit
def _visible(rows, cols, num_queries, num_keys, key_lo, HAS_WINDOW: tl.constexpr):
    visible = cols[None, :] <= (rows + (num_keys - num_queries))[:, None]
    if HAS_WINDOW:
        visible = visible & (cols[None, :] >= key_lo[:, None])
    return visible


@triton.jit
def _dq_key_block(
    dq,
    dqb,
    q,
    grad_out,
    q_bias,
    lse,
    delta,
    rows,
    key_lo,
    k_base,
    v_base,
    kb_base,
    stride_kt,
    stride_vt,
    stride_kbt,
    start,
    num_queries,
    num_keys,
    scale_log2,
    HEAD_DIM: tl.constexpr,
    BLOCK_N: tl.constexpr,
    MASKED: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
):
    cols = start + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    col_ok = cols < num_keys
    k = tl.load(k_base + cols[:, None] * stride_kt + dims[None, :], mask=col_ok[:, None], other=0.0)
    v_t = tl.load(v_base + cols[None, :] * stride_vt + dims[:, None], mask=col_ok[None, :], other=0.0)
    k_bias = tl.load(kb_base + cols * stride_kbt, mask=col_ok, other=0.0)
    scores = biased_scores(q, tl.trans(k), q_bias, k_bias, scale_log2)
    if MASKED:
        scores = tl.where(_visible(rows, cols, num_queries, num_keys, key_lo, HAS_WINDOW), scores, float("-inf"))
    probs = tl.math.exp2(scores - lse[:, None])
    d_scores = probs * (dot(grad_out, v_t) - delta[:, None])
    return dq + dot(d_scores.to(k.dtype), k), dqb + tl.sum(d_scores, 1)


def dq_shared_bytes(block_m, block_n, head_dim, stages, elem):
    """Estimated shared memory: q and dO tiles once, k and v tiles per pipeline stage."""
    return elem * head_dim * (2 * block_m + stages * 2 * block_n) + 1024


@triton.autotune(
    configs=block_configs(
        [(64, 64, 4, 2), (128, 64, 8, 2), (64, 32, 4, 2)],
        [(64, 32, 8, 2, 64), (32, 32, 4, 1, 64), (32, 16, 4, 1)],
        (32, 16, 4, 1),
    ),
    key=["HEAD_DIM", "HAS_WINDOW"],
    prune_configs_by={"early_config_prune": shared_memory_pruner(dq_shared_bytes)},
)
@triton.jit
def biased_attention_dq_kernel(
    Q,
    K,
    V,
    QB,
    KB,
    KEY_LO,
    DO,
    LSE,
    DELTA,
    DQ,
    DQB,
    stride_qb,
    stride_qt,
    stride_qh,
    stride_kb,
    stride_kt,
    stride_kh,
    stride_vb,
    stride_vt,
    stride_vh,
    stride_qbb,
    stride_qbt,
    stride_kbb,
    stride_kbt,
    num_queries,
    num_keys,
    q_heads,
    group,
    scale,
    scale_log2,
    HEAD_DIM: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """dq and d q_bias for one query block of one query head (q, dO and dq share strides; q_bias
    and its gradient too)."""
    batch_head = tl.program_id(1)
    b = (batch_head // q_heads).to(tl.int64)
    head = batch_head % q_heads
    kv_head = head // group
    first_row = tl.program_id(0) * BLOCK_M
    rows = first_row + tl.arange(0, BLOCK_M)
    row_ok = rows < num_queries
    dims = tl.arange(0, HEAD_DIM)
    row_offsets = b * stride_qb + head * stride_qh + rows[:, None] * stride_qt + dims[None, :]
    q = tl.load(Q + row_offsets, mask=row_ok[:, None], other=0.0)
    grad_out = tl.load(DO + row_offsets, mask=row_ok[:, None], other=0.0)
    q_bias = tl.load(QB + b * stride_qbb + rows * stride_qbt + head, mask=row_ok, other=0.0)
    stats = batch_head.to(tl.int64) * num_queries + rows
    lse = tl.load(LSE + stats, mask=row_ok, other=float("inf"))
    delta = tl.load(DELTA + stats, mask=row_ok, other=0.0)
    key_lo = load_key_lo(KEY_LO + b * num_queries, rows, row_ok, num_keys, BLOCK_M, HAS_WINDOW)
    k_base = K + b * stride_kb + kv_head * stride_kh
    v_base = V + b * stride_vb + kv_head * stride_vh
    kb_base = KB + b * stride_kbb + head

    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    dqb = tl.zeros([BLOCK_M], dtype=tl.float32)
    start, unmasked_stop, stop = key_range(first_row, BLOCK_M, num_queries, num_keys, key_lo, BLOCK_N, HAS_WINDOW)
    for key_start in range(start, unmasked_stop, BLOCK_N):
        dq, dqb = _dq_key_block(
            dq,
            dqb,
            q,
            grad_out,
            q_bias,
            lse,
            delta,
            rows,
            key_lo,
            k_base,
            v_base,
            kb_base,
            stride_kt,
            stride_vt,
            stride_kbt,
            key_start,
            num_queries,
            num_keys,
            scale_log2,
            HEAD_DIM,
            BLOCK_N,
            False,
            HAS_WINDOW,
        )
    for key_start in range(unmasked_stop, stop, BLOCK_N):
        dq, dqb = _dq_key_block(
            dq,
            dqb,
            q,
            grad_out,
            q_bias,
            lse,
            delta,
            rows,
            key_lo,
            k_base,
            v_base,
            kb_base,
            stride_kt,
            stride_vt,
            stride_kbt,
            key_start,
            num_queries,
            num_keys,
            scale_log2,
            HEAD_DIM,
            BLOCK_N,
            True,
            HAS_WINDOW,
        )
    tl.store(DQ + row_offsets, (dq * scale).to(DQ.dtype.element_ty), mask=row_ok[:, None])
    tl.store(DQB + b * stride_qbb + rows * stride_qbt + head, dqb, mask=row_ok)


@triton.jit
def _dkdv_query_block(
    dk,
    dv,
    dkb,
    k,
    v,
    k_bias,
    cols,
    q_base,
    do_base,
    qb_base,
    lse_base,
    delta_base,
    key_lo_base,
    stride_qt,
    stride_qbt,
    start,
    num_queries,
    num_keys,
    scale_log2,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    MASKED: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
):
    rows = start + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    row_ok = rows < num_queries
    q = tl.load(q_base + rows[:, None] * stride_qt + dims[None, :], mask=row_ok[:, None], other=0.0)
    grad_out = tl.load(do_base + rows[:, None] * stride_qt + dims[None, :], mask=row_ok[:, None], other=0.0)
    q_bias = tl.load(qb_base + rows * stride_qbt, mask=row_ok, other=0.0)
    lse = tl.load(lse_base + rows, mask=row_ok, other=float("inf"))
    delta = tl.load(delta_base + rows, mask=row_ok, other=0.0)
    scores = biased_scores(q, tl.trans(k), q_bias, k_bias, scale_log2)
    if MASKED:
        key_lo = load_key_lo(key_lo_base, rows, row_ok, num_keys, BLOCK_M, HAS_WINDOW)
        scores = tl.where(_visible(rows, cols, num_queries, num_keys, key_lo, HAS_WINDOW), scores, float("-inf"))
    probs = tl.math.exp2(scores - lse[:, None])
    dv += dot(tl.trans(probs.to(grad_out.dtype)), grad_out)
    d_scores = probs * (dot(grad_out, tl.trans(v)) - delta[:, None])
    dk += dot(tl.trans(d_scores.to(q.dtype)), q)
    dkb += tl.sum(d_scores, 0)
    return dk, dv, dkb


def dkdv_shared_bytes(block_m, block_n, head_dim, stages, elem):
    """Estimated shared memory: k and v tiles once, q and dO tiles per pipeline stage, and one
    [M, N] score tile for the transposed products."""
    return elem * head_dim * (2 * block_n + stages * 2 * block_m) + elem * block_m * block_n + 1024


@triton.autotune(
    configs=block_configs(
        # 64x64 with 4 warps spills at D 128, so it is tried up to D 64 only (docs/kernels.md)
        [(64, 64, 4, 2, 64), (32, 64, 8, 2), (32, 64, 4, 2), (64, 128, 8, 2), (32, 32, 4, 2)],
        [(32, 32, 8, 2, 64), (32, 32, 4, 1, 64), (32, 32, 8, 1), (16, 16, 4, 1)],
        (16, 32, 4, 1),
    ),
    key=["HEAD_DIM", "HAS_WINDOW"],
    prune_configs_by={"early_config_prune": shared_memory_pruner(dkdv_shared_bytes)},
)
@triton.jit
def biased_attention_dkdv_kernel(
    Q,
    K,
    V,
    QB,
    KB,
    KEY_LO,
    QUERY_END,
    DO,
    LSE,
    DELTA,
    DK,
    DV,
    DKB,
    stride_qb,
    stride_qt,
    stride_qh,
    stride_kb,
    stride_kt,
    stride_kh,
    stride_vb,
    stride_vt,
    stride_vh,
    stride_qbb,
    stride_qbt,
    stride_kbb,
    stride_kbt,
    num_queries,
    num_keys,
    q_heads,
    group,
    scale,
    scale_log2,
    HEAD_DIM: tl.constexpr,
    HAS_WINDOW: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """dk, dv of one key block of one kv head, summed over its query heads; d k_bias per query head.
    (q/dO, k/dk, v/dv and k_bias/d k_bias share strides.)"""
    kv_heads = q_heads // group
    batch_head = tl.program_id(1)
    b = (batch_head // kv_heads).to(tl.int64)
    kv_head = batch_head % kv_heads
    first_col = tl.program_id(0) * BLOCK_N
    cols = first_col + tl.arange(0, BLOCK_N)
    col_ok = cols < num_keys
    dims = tl.arange(0, HEAD_DIM)
    offset = num_keys - num_queries
    k_offsets = b * stride_kb + kv_head * stride_kh + cols[:, None] * stride_kt + dims[None, :]
    v_offsets = b * stride_vb + kv_head * stride_vh + cols[:, None] * stride_vt + dims[None, :]
    k = tl.load(K + k_offsets, mask=col_ok[:, None], other=0.0)
    v = tl.load(V + v_offsets, mask=col_ok[:, None], other=0.0)

    # Queries that may see this block: from the causal diagonal to the last query_end of its keys.
    start = (tl.maximum(first_col - offset, 0) // BLOCK_M) * BLOCK_M
    if HAS_WINDOW:
        stop = tl.max(tl.load(QUERY_END + b * num_keys + cols, mask=col_ok, other=0), 0)
        unmasked_start = stop
    else:
        stop = num_queries
        last_col = tl.minimum(first_col + BLOCK_N, num_keys) - 1
        unmasked_start = tl.minimum(tl.cdiv(tl.maximum(last_col - offset, 0), BLOCK_M) * BLOCK_M, stop)
        unmasked_start = tl.maximum(unmasked_start, start)

    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    for member in range(0, group):
        head = kv_head * group + member
        kb_offsets = b * stride_kbb + cols * stride_kbt + head
        k_bias = tl.load(KB + kb_offsets, mask=col_ok, other=0.0)
        q_base = Q + b * stride_qb + head * stride_qh
        do_base = DO + b * stride_qb + head * stride_qh
        qb_base = QB + b * stride_qbb + head
        stats_base = (b * q_heads + head) * num_queries
        key_lo_base = KEY_LO + b * num_queries
        dkb = tl.zeros([BLOCK_N], dtype=tl.float32)
        for query_start in range(start, unmasked_start, BLOCK_M):
            dk, dv, dkb = _dkdv_query_block(
                dk,
                dv,
                dkb,
                k,
                v,
                k_bias,
                cols,
                q_base,
                do_base,
                qb_base,
                LSE + stats_base,
                DELTA + stats_base,
                key_lo_base,
                stride_qt,
                stride_qbt,
                query_start,
                num_queries,
                num_keys,
                scale_log2,
                HEAD_DIM,
                BLOCK_M,
                True,
                HAS_WINDOW,
            )
        for query_start in range(unmasked_start, stop, BLOCK_M):
            dk, dv, dkb = _dkdv_query_block(
                dk,
                dv,
                dkb,
                k,
                v,
                k_bias,
                cols,
                q_base,
                do_base,
                qb_base,
                LSE + stats_base,
                DELTA + stats_base,
                key_lo_base,
                stride_qt,
                stride_qbt,
                query_start,
                num_queries,
                num_keys,
                scale_log2,
                HEAD_DIM,
                BLOCK_M,
                False,
                HAS_WINDOW,
            )
        tl.store(DKB + kb_offsets, -dkb, mask=col_ok)
    tl.store(DK + k_offsets, (dk * scale).to(DK.dtype.element_ty), mask=col_ok[:, None])
    tl.store(DV + v_offsets, dv.to(DV.dtype.element_ty), mask=col_ok[:, None])


# Launching them.


def _strides3(t: torch.Tensor) -> tuple[int, int, int]:
    return t.stride(0), t.stride(1), t.stride(2)


def _shape_args(q, k, scale):
    batch, num_queries, q_heads, head_dim = q.shape
    return dict(
        num_queries=num_queries,
        num_keys=k.shape[1],
        q_heads=q_heads,
        group=q_heads // k.shape[2],
        head_dim=head_dim,
        batch=batch,
    )


@functools.cache
def _no_window(device: torch.device) -> torch.Tensor:
    """The kernels' placeholder for "no key window", made once per device (a decode step would
    otherwise spend a launch on it)."""
    return torch.zeros(1, dtype=torch.int32, device=device)


class TritonBiasedAttention(torch.autograd.Function):
    """Saves q, k, v, the biases, the output and the base-2 log-sum-exp; recomputes the rest."""

    @staticmethod
    def forward(ctx, q, k, v, q_bias, k_bias, scale, key_lo, query_end):
        q, k, v, q_bias, k_bias = (t.contiguous() for t in (q, k, v, q_bias, k_bias))
        shape = _shape_args(q, k, scale)
        has_window = key_lo is not None
        window = key_lo if has_window else _no_window(q.device)
        keep_fp32_output = keeps_fp32_output(q.dtype, ctx.needs_input_grad[3] or ctx.needs_input_grad[4])
        batch_heads, num_queries, num_keys = shape["batch"] * shape["q_heads"], shape["num_queries"], shape["num_keys"]
        splits = key_splits(num_queries, num_keys, batch_heads, q.device, any(ctx.needs_input_grad))
        out_dtype = torch.float32 if keep_fp32_output or splits > 1 else q.dtype
        out = torch.empty((splits, *q.shape), dtype=out_dtype, device=q.device)
        lse = torch.empty(splits, batch_heads, num_queries, dtype=torch.float32, device=q.device)
        grid = lambda meta: (triton.cdiv(num_queries, meta["BLOCK_M"]), batch_heads, splits)  # noqa: E731
        biased_attention_forward_kernel[grid](
            q,
            k,
            v,
            q_bias,
            k_bias,
            window,
            out,
            lse,
            *_strides3(q),
            *_strides3(k),
            *_strides3(v),
            *_strides3(out[0]),
            q_bias.stride(0),
            q_bias.stride(1),
            k_bias.stride(0),
            k_bias.stride(1),
            num_queries,
            num_keys,
            shape["q_heads"],
            shape["group"],
            scale * LOG2E_HOST,
            split_length(num_keys, splits),
            out.stride(0),
            lse.stride(0),
            HEAD_DIM=shape["head_dim"],
            HAS_WINDOW=has_window,
            DECODE=num_queries <= DECODE_MAX_QUERIES,
        )
        if splits > 1:  # inference only: no gradient, so the merged output can be q's dtype
            out, lse = merge_split_outputs_triton(out, lse, shape["q_heads"], q.dtype)
        else:
            out, lse = out[0], lse[0]
        lse = lse.reshape(shape["batch"], shape["q_heads"], num_queries)
        ctx.save_for_backward(q, k, v, q_bias, k_bias, out, lse, window, query_end if has_window else window)
        ctx.scale, ctx.has_window = scale, has_window
        return out.to(q.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, q_bias, k_bias, out, lse, window, query_end = ctx.saved_tensors
        grad_out = grad_out.contiguous()
        shape = _shape_args(q, k, ctx.scale)
        batch, q_heads, num_queries = shape["batch"], shape["q_heads"], shape["num_queries"]
        delta = torch.empty_like(lse)
        output_dot_grad_kernel[(triton.cdiv(num_queries, _DELTA_BLOCK), batch * q_heads)](
            out,
            grad_out,
            delta,
            *_strides3(out),
            num_queries,
            q_heads,
            HEAD_DIM=shape["head_dim"],
            BLOCK_M=_DELTA_BLOCK,
        )
        dq = torch.empty_like(q)
        dk, dv = torch.empty_like(k), torch.empty_like(v)
        dkb = torch.empty_like(k_bias)
        dqb = torch.empty_like(q_bias)
        common = (
            *_strides3(q),
            *_strides3(k),
            *_strides3(v),
            q_bias.stride(0),
            q_bias.stride(1),
            k_bias.stride(0),
            k_bias.stride(1),
            num_queries,
            shape["num_keys"],
            q_heads,
            shape["group"],
            ctx.scale,
            ctx.scale * LOG2E_HOST,
        )
        dq_grid = lambda meta: (triton.cdiv(num_queries, meta["BLOCK_M"]), batch * q_heads)  # noqa: E731
        biased_attention_dq_kernel[dq_grid](
            q,
            k,
            v,
            q_bias,
            k_bias,
            window,
            grad_out,
            lse,
            delta,
            dq,
            dqb,
            *common,
            HEAD_DIM=shape["head_dim"],
            HAS_WINDOW=ctx.has_window,
        )
        kv_grid = lambda meta: (triton.cdiv(shape["num_keys"], meta["BLOCK_N"]), batch * k.shape[2])  # noqa: E731
        biased_attention_dkdv_kernel[kv_grid](
            q,
            k,
            v,
            q_bias,
            k_bias,
            window,
            query_end,
            grad_out,
            lse,
            delta,
            dk,
            dv,
            dkb,
            *common,
            HEAD_DIM=shape["head_dim"],
            HAS_WINDOW=ctx.has_window,
        )
        return dq, dk, dv, dqb, dkb, None, None, None


def triton_biased_attention(q, k, v, q_bias, k_bias, scale, bounds):
    """Validated inputs in; ``bounds`` is ``common.key_window_bounds(...)`` (None: plain causal)."""
    key_lo, query_end = (None, None) if bounds is None else bounds
    return TritonBiasedAttention.apply(q, k, v, q_bias, k_bias, scale, key_lo, query_end)
