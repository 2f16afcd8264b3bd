"""Forward kernel: FlashAttention-2 online softmax with per-query/per-key additive biases.

One program owns a block of queries of one query head and walks the key blocks it can see:
below the causal diagonal without masks, the diagonal (and, with left padding or packed
sequences, every block from the block's lowest visible key on) with masks. Blocks above the
diagonal or before the lowest visible key are never touched. Writes the output and the base-2
log-sum-exp the backward kernels recompute probabilities from (+inf for rows with no keys).
"""

from __future__ import annotations

import triton
import triton.language as tl

from .block_configs import block_configs, shared_memory_pruner
from .triton_common import biased_scores, dot


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


def forward_shared_bytes(block_m, block_n, head_dim, stages, elem):
    """Estimated shared memory: the query tile once, the key and value tiles once per pipeline
    stage (within 2% of the compiled figure in 16-bit, above it in fp32: docs/kernels.md)."""
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
