"""Which output the backward pass computes ``delta_i = dO_i . O_i`` from (shared by the backends).

FlashAttention-2 takes delta from the stored output in the input's precision. That is harmless
for dq, dk and dv, but the bias gradient ``d k_bias_j = -sum_i dS_ij`` carries every row's delta
rounding (about |O| * 2^-8 in bf16), and FoX's gate gradient is a reverse cumulative sum of it over
time, so the rounding errors add up along the sequence. On the bf16 test case of
tests/kernels (T = 700), max |d log f| error against fp64 is 0.17 with delta from the bf16 output
and below 1e-4 with delta from an fp32 one. So when a bias gradient is wanted, the forward keeps
its fp32 output for the backward (one extra fp32 copy of the output per call, saved instead of
the low-precision one).
"""

from __future__ import annotations

import torch


def keeps_fp32_output(dtype: torch.dtype, bias_needs_grad: bool) -> bool:
    """Whether the forward saves an fp32 output for delta (the caller still gets ``dtype``)."""
    return bias_needs_grad and dtype != torch.float32
