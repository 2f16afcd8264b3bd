"""Attention of a chunk of queries over a cache window plus the chunk itself.

Positions are re-indexed inside what attention sees: window entry i sits at position i and
the chunk's queries/keys follow at W, W+1, ... (keys are rotated here, at attention time, from
their pre-RoPE form). Each window entry's logit gets + log(count) (stated-CLM eq. 17), which
makes one entry standing for `count` identical tokens attend exactly like those tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lm_eval_longmem.models.attention.part_attention import cpu_attention_with_lse
from lm_eval_longmem.models.runtime.llama_decoder import rotate, soft_cap


def logit_bias(log_counts: torch.Tensor, chunk_len: int, dtype: torch.dtype) -> torch.Tensor:
    """[c, W + c] additive bias: + log count on the window, causal 0/-inf on the chunk."""
    window = log_counts.to(dtype)[None, :].expand(chunk_len, -1)
    causal = torch.full((chunk_len, chunk_len), float("-inf"), dtype=dtype, device=log_counts.device).triu(1)
    return torch.cat([window, causal], dim=1)


def count_weighted_attention(q, k, v, bias, scale: float, softcap: float | None = None) -> torch.Tensor:
    """softmax(cap(q.k * scale) + bias) v for q [H, c, d], k/v [Hkv, n, d] (GQA: H multiple of Hkv); `cap` is
    Gemma 2's logit soft-capping, applied before the bias as its eager attention applies it before the mask."""
    if not softcap:
        return F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=bias, scale=scale, enable_gqa=True)[
            0
        ]
    weights = attention_probabilities(q, k, bias, scale, softcap).to(v.dtype)
    return weights @ v.repeat_interleave(q.shape[0] // v.shape[0], dim=0)


def attention_probabilities(q, k, bias, scale: float, softcap: float | None = None) -> torch.Tensor:
    """The weights of `count_weighted_attention`, [H, c, n] (for the attention each entry receives)."""
    return torch.softmax(biased_scores(q, k, bias, scale, softcap), dim=-1)


def biased_scores(q, k, bias, scale: float, softcap: float | None = None) -> torch.Tensor:
    """cap(q.k * scale) + bias in float32, [H, c, n], for q [H, c, d] and k [Hkv, n, d] (GQA)."""
    k = k.repeat_interleave(q.shape[0] // k.shape[0], dim=0)
    if q.dtype == torch.float32 and not softcap:
        # q.k * scale + bias as one fused op, the same float32 sums: two passes over [H, c, n] fewer
        return torch.baddbmm(bias.to(q.dtype), q, k.transpose(1, 2), alpha=scale)
    return soft_cap((q @ k.transpose(1, 2)).float() * scale, softcap) + bias.float()


def attend(q, keys, values, window_log_counts, cos, sin, scale, want_received=False, softcap=None, bias=None):
    """Attention output [H, c, d] and, if asked, the attention each window entry received [W].

    q [H, c, d] is the chunk's queries, pre-RoPE; keys (already rotated at positions 0..W+c-1)
    and values [Hkv, W + c, d] are the window followed by the chunk's own entries. `bias`, when
    given, is `logit_bias(window_log_counts, c, q.dtype)` already built (layers whose windows
    have the same counts share one), and `window_log_counts` is not read.
    """
    c = q.shape[1]
    W = keys.shape[1] - c
    queries = rotate(q, cos[W : W + c], sin[W : W + c])
    if W == 0 and not softcap:
        # no window (an Infini segment's start): plain causal attention, without the [c, c] bias and
        # the two temporaries building it (50 MB at c = 2048), the largest part of a segment's peak
        out = F.scaled_dot_product_attention(
            queries[None], keys[None], values[None], is_causal=True, scale=scale, enable_gqa=True
        )[0]
        return out, keys.new_zeros(0) if want_received else None
    if bias is None:
        bias = logit_bias(window_log_counts, c, queries.dtype)
    fused = None
    if want_received and not softcap:
        fused = cpu_attention_with_lse(queries[None], keys[None], values[None], bias, scale)
    if fused is not None:
        with torch.no_grad():
            received = received_from_lse(queries.detach(), keys[:, :W].detach(), bias[0, :W], fused[1][0], scale)
        return fused[0][0], received
    out = count_weighted_attention(queries, keys, values, bias, scale, softcap)
    received = None
    if want_received:
        with torch.no_grad():
            # eq. 18: summed over every query of the chunk and every attention head of the layer
            # (with GQA each query head reads its group's KV head, so this sums over all groups).
            weights = attention_probabilities(queries.detach(), keys.detach(), bias, scale, softcap)
            received = weights.sum(dim=(0, 1))[:W]  # a contiguous sum, then the window's entries
    return out, received


# Scores of one tile of queries x the window in `received_from_lse` (float32): small enough to stay
# in a CPU's caches between the product that writes it and the exp and sum that read it, and
# reused across tiles (a fresh cache-sized output is page-faulted in on every call).
RECEIVED_TILE_BYTES = 8 * 2**20


def received_from_lse(q, window_keys, window_log_counts, lse, scale: float) -> torch.Tensor:
    """eq. 18 [W] from the forward's log-sum-exp lse [H, c]: the sum over heads and queries of
    exp(q.k * scale + log count - lse), the softmax weights of the window's entries only, computed
    as count * sum exp(q.k * scale - lse). Query heads are grouped by the key-value head they read
    (no copy of the keys per query head), and the scores go through one reused tile of about
    `RECEIVED_TILE_BYTES`: the softmax itself would write the weights of every key, the chunk's own
    too, and pass over them three times."""
    heads, chunk, dim = q.shape
    kv_heads, width = window_keys.shape[:2]
    rows = heads // kv_heads * chunk  # a key-value head's queries: its group's heads, one after another
    grouped_q = q.reshape(kv_heads, rows, dim)
    negative_lse = lse.float().reshape(kv_heads, rows, 1).neg()
    keys_t = window_keys.transpose(1, 2)
    step = max(1, min(rows, RECEIVED_TILE_BYTES // (4 * kv_heads * max(width, 1))))
    tile = torch.empty(kv_heads * step * width, dtype=torch.float32, device=q.device)
    total = torch.zeros(kv_heads, width, dtype=torch.float32, device=q.device)
    for first in range(0, rows, step):
        last = min(rows, first + step)
        scores = tile[: kv_heads * (last - first) * width].view(kv_heads, last - first, width)
        if q.dtype == torch.float32:
            torch.baddbmm(negative_lse[:, first:last], grouped_q[:, first:last], keys_t, alpha=scale, out=scores)
        else:  # q.k in the model's dtype, as the attention computed it, then float32
            scores.copy_(torch.bmm(grouped_q[:, first:last], keys_t)).mul_(scale).add_(negative_lse[:, first:last])
        total += scores.exp_().sum(dim=1)
    return total.sum(dim=0) * window_log_counts.float().exp()
