"""What the Triton kernels share: the log2(e) constant, block configs, interpreter detection.

Logits, biases and the saved log-sum-exp live in base 2 inside the kernels (``exp2`` is the
cheap instruction), so every bias is multiplied by ``LOG2E`` as it is loaded.
"""

from __future__ import annotations

import os

import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
LOG2E_HOST = 1.4426950408889634

INTERPRETED = os.environ.get("TRITON_INTERPRET", "").lower() in ("1", "true", "on", "yes")


def block_configs(gpu_choices, interpreted_choice):
    """Autotune candidates ``(BLOCK_M, BLOCK_N, warps, stages)``; one fixed small config under the
    interpreter, where autotuning would only benchmark the CPU emulation."""
    choices = [interpreted_choice] if INTERPRETED else gpu_choices
    return [
        triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=warps, num_stages=stages)
        for m, n, warps, stages in choices
    ]
