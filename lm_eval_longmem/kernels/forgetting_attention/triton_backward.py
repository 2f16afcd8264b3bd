"""Backward kernels (FlashAttention-2 split): delta preprocess, dq, and dk/dv/d k_bias.

With ``P = exp(S - lse)`` recomputed per block and ``delta_i = sum_d dO_i * O_i``:
``dS = P * (dO V^T - delta)``, ``dq = scale * dS K``, ``dk = scale * dS^T Q``, ``dv = P^T dO`` and
``d k_bias_j = -sum_i dS_ij``, ``d q_bias_i = sum_j dS_ij``. The query-bias gradient is zero in exact
arithmetic (a per-row shift leaves a softmax unchanged) but is computed all the same: it carries
each row's rounding of delta with the opposite sign of the key-bias gradient, so when both biases
are one tensor (FoX's c) the roundings cancel instead of adding up (see ``blocked.py``).
The dq kernel walks key blocks for a query block, as the forward does; the dk/dv kernel walks
query blocks for a key block and sums the query heads that share its kv head (GQA) in registers.
"""

from __future__ import annotations

import triton
import triton.language as tl

from .block_configs import block_configs, shared_memory_pruner
from .triton_common import biased_scores, dot
from .triton_forward import key_range, load_key_lo


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
        # 64x64 with 4 warps spills 6.8 KB at D 128 on sm_80; 32x64 with 8 warps and 32x32 spill nothing
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
