"""What the Triton kernels share: the biased scores and interpreter detection.

Logits and the saved log-sum-exp live in base 2 inside the kernels (``exp2`` is the cheap
instruction). The biases are subtracted from each other before they meet the scores
(``biased_scores``): FoX's cumulative log-gates grow linearly with the position, and adding
``a_i`` and ``b_j`` one after the other would round the scores at that magnitude rather than at
the size of ``a_i - b_j``.
"""

from __future__ import annotations

import os

import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
LOG2E_HOST = 1.4426950408889634

# fp32 inputs multiply in IEEE fp32, never silently in TF32 (the official FoX kernel does the
# same); fp16/bf16 inputs use the tensor cores either way.
DOT_PRECISION = tl.constexpr("ieee")

INTERPRETED = os.environ.get("TRITON_INTERPRET", "").lower() in ("1", "true", "on", "yes")


@triton.jit
def dot(a, b):
    return tl.dot(a, b, input_precision=DOT_PRECISION)


@triton.jit
def biased_scores(q, k_t, q_bias, k_bias, scale_log2):
    """Base-2 logits ``(q.k * scale + a_i - b_j) * log2(e)`` of a ``[M, N]`` block (raw fp32 biases)."""
    return dot(q, k_t) * scale_log2 + (q_bias[:, None] - k_bias[None, :]) * LOG2E
