"""Readable PyTorch definition of attention with per-query and per-key logit biases.

    s_ij = (q_i . k_j) * scale + q_bias_i - k_bias_j      over visible keys j
    o_i  = sum_j softmax_j(s_ij) v_j

It builds the full Tq x Tk score matrix, so it is the oracle for tests, not a path for long inputs.
Several long-memory mechanisms are exactly this form:

* Forgetting attention (FoX): ``q_bias = k_bias = c`` with ``c = cumsum(log f)``, so the bias is
  ``c_i - c_j = sum_{l=j+1..i} log f_l``.
* ALiBi: ``s_ij = q.k - m (i - j)`` is ``q_bias_i = -m * i`` and ``k_bias_j = -m * j``.
* Stated-CLM's merged cache entries: ``softmax(q.k + log cnt_j)`` is ``q_bias = 0`` and
  ``k_bias = -log cnt``.

Rows that see no key at all (left padding) return zeros rather than NaN.
"""

from __future__ import annotations

import torch

from .common import check_attention_args, default_scale, fp32, key_window_bounds, visible_keys


def reference_biased_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    q_bias: torch.Tensor,
    k_bias: torch.Tensor,
    *,
    scale: float | None = None,
    seq_start: torch.Tensor | None = None,
    cu_seqlens: torch.Tensor | None = None,
) -> torch.Tensor:
    """q ``[B, Tq, HQ, D]``, k/v ``[B, Tk, H, D]``, biases ``[B, Tq, HQ]``/``[B, Tk, HQ]`` -> ``[B, Tq, HQ, D]``."""
    check_attention_args(q, k, v, q_bias, k_bias, seq_start, cu_seqlens)
    batch, num_queries, q_heads, head_dim = q.shape
    num_keys, group = k.shape[1], q_heads // k.shape[2]
    scale = default_scale(scale, head_dim)
    keys = k.float().repeat_interleave(group, dim=2)
    values = v.float().repeat_interleave(group, dim=2)
    scores = torch.einsum("bihd,bjhd->bhij", q.float(), keys) * scale
    scores = scores + (fp32(q_bias).transpose(1, 2)[..., :, None] - fp32(k_bias).transpose(1, 2)[..., None, :])
    bounds = key_window_bounds(batch, num_queries, num_keys, seq_start, cu_seqlens, q.device)
    key_lo = None if bounds is None else bounds[0]
    mask = visible_keys(key_lo, range(num_queries), range(num_keys), num_queries, num_keys, q.device)[:, None]
    has_key = mask.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~mask, float("-inf")).masked_fill(~has_key, 0.0)
    probs = torch.softmax(scores, dim=-1) * has_key
    return torch.einsum("bhij,bjhd->bihd", probs, values).to(q.dtype)
