"""Exact softmax attention over keys that come in parts, each part scored with its own
rotation of the queries and keys.

Self-Extend (neighbour keys at true distance + far keys at grouped distance) and LM-Infinite
(keys at true distance + far global keys at the clamped distance) are both this: per query,
a set of keys split into two disjoint parts, part p scored as q_p . k_p. One softmax over both
parts is computed without materializing the full matrix:

* per block of queries, each part gathers only the key ranges it can reach (a window, the
  global tokens, the far past) and a boolean mask says which (query, key) pairs belong to it;
  the parts' masks are disjoint, so a key in both ranges is counted once;
* each part is attended separately, returning its output and the log-sum-exp of its scores,
  and the two are merged exactly: out = sum_p exp(lse_p - lse) out_p, lse = log sum_p exp(lse_p).
  With `sdpa` this uses PyTorch's fused kernels that also return the log-sum-exp: the CPU
  flash-attention kernel (grouped-query heads as they are) and, on CUDA, the memory-efficient
  kernel with an additive mask; `eager` (and any other device) computes the block's scores
  explicitly. Either way memory is bounded by the block size, not the square of
  the sequence length, and each part costs about one ordinary attention over its keys.

A method supplies a `PartRule`: its query/key forms, the key ranges per query block and the
mask predicate. Positions come from transformers' `position_ids`; keys are the (rotated) keys
of the KV cache, so prefill and cached decoding run the same code.
"""

from __future__ import annotations

from typing import Protocol

import torch

Range = tuple[int, int]
_EAGER_BLOCK_ELEMENTS = 1 << 25  # scores per eager block (128 MiB in fp32)
_SDPA_BLOCK_QUERIES = 1024
_SDPA_MASK_ELEMENTS = 1 << 25  # float mask entries per block (128 MiB in fp32)
# PyTorch's fused CPU attention, the kernel behind SDPA on the CPU; unlike SDPA it also returns
# the log-sum-exp, which merging the parts needs.
_CPU_FLASH = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
# The memory-efficient CUDA kernel behind SDPA: takes an additive mask and returns the log-sum-exp.
_CUDA_EFFICIENT = getattr(torch.ops.aten, "_scaled_dot_product_efficient_attention", None)
_BIAS_ALIGNMENT = 16  # the CUDA kernel wants the mask's rows aligned to 16 elements, as SDPA pads them


class PartRule(Protocol):
    def forms(self, part: int, query, key, query_pos, key_pos, inv_freq) -> tuple[torch.Tensor, torch.Tensor]:
        """(queries, keys) of `part`, rotated as the part needs (shapes as the inputs)."""

    def key_ranges(self, part: int, first_query: int, end_query: int, key_pos: torch.Tensor) -> list[Range]:
        """Key indices [start, stop) that queries first_query..end_query-1 (KV indices) may use in `part`."""

    def allowed(self, part: int, distance: torch.Tensor, key_pos: torch.Tensor) -> torch.Tensor:
        """Which (query, key) pairs belong to `part`: distance (q, k) and key_pos (batch, k) -> (batch|1, 1, q, k)."""

    def pieces(self) -> list:
        """The same parts as distance bands and global keys (band_attention.py's fast path)."""


NUM_PARTS = 2


def merge_ranges(ranges: list[Range], length: int) -> list[Range]:
    """Clip to [0, length), drop empty ones, and merge overlaps so no key is taken twice."""
    clipped = sorted((max(0, a), min(length, b)) for a, b in ranges)
    merged: list[list[int]] = []
    for a, b in clipped:
        if a >= b:
            continue
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def positions(position_ids: torch.Tensor | None, batch: int, q_len: int, kv_len: int, device):
    """(query positions (batch, q_len), key positions (batch, kv_len)).

    Queries are the last q_len entries of the KV cache, and a row's tokens are contiguous
    (left padding shifts a row, right padding only appends), so key index i of row b sits at
    position i + (last query position - (kv_len - 1)). Padding keys get positions outside the
    row; the attention mask excludes them."""
    if position_ids is None:
        position_ids = torch.arange(kv_len - q_len, kv_len, device=device)[None]
    query_pos = position_ids.to(device=device, dtype=torch.long).expand(batch, q_len)
    shift = query_pos[:, -1:] - (kv_len - 1)
    key_pos = torch.arange(kv_len, device=device)[None] + shift
    return query_pos, key_pos


def part_attention(
    rule: PartRule,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    position_ids: torch.Tensor | None,
    inv_freq: torch.Tensor,
    backend: str,
) -> torch.Tensor:
    """Attention output (batch, q_len, heads, head_dim) for `rule`; `backend` is 'sdpa' or 'eager'."""
    batch, heads, q_len, _ = query.shape
    kv_len = key.shape[2]
    groups = heads // key.shape[1]
    offset = kv_len - q_len
    query_pos, key_pos = positions(position_ids, batch, q_len, kv_len, query.device)
    padding = _as_bool_mask(attention_mask)
    forms: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    output = query.new_empty(batch, heads, q_len, value.shape[-1])
    block = _block_size(backend, batch, heads, q_len, kv_len)
    for start in range(0, q_len, block):
        stop = min(start + block, q_len)
        first, end = offset + start, offset + stop
        query_index = torch.arange(first, end, device=query.device)
        partials = []
        for part in range(NUM_PARTS):
            ranges = merge_ranges(rule.key_ranges(part, first, end, key_pos), kv_len)
            if not ranges:
                continue
            if part not in forms:
                forms[part] = rule.forms(part, query, key, query_pos, key_pos, inv_freq)
            part_queries, part_keys = forms[part]
            key_index = torch.cat([torch.arange(a, b, device=query.device) for a, b in ranges])
            distance = query_index[:, None] - key_index[None, :]
            mask = rule.allowed(part, distance, key_pos[:, key_index]) & (distance >= 0)
            if padding is not None:
                mask = mask & padding[:, :, start:stop][..., key_index]
            partials.append(
                attend_with_lse(
                    backend,
                    part_queries[:, :, start:stop],
                    _gather(part_keys, ranges),
                    _gather(value, ranges),
                    mask,
                    scaling,
                    groups,
                )
            )
        output[:, :, start:stop] = merge_partials(partials)
    return output.transpose(1, 2).contiguous()


def _gather(x: torch.Tensor, ranges: list[Range]) -> torch.Tensor:
    if len(ranges) == 1:
        a, b = ranges[0]
        return x[:, :, a:b]
    return torch.cat([x[:, :, a:b] for a, b in ranges], dim=2)


def attend_with_lse(backend, q, k, v, mask, scaling, groups):
    """(output, log-sum-exp of the scores) of q over the keys `mask` allows; a query row with no
    allowed key gets output 0 and log-sum-exp -inf, so it adds nothing when merged."""
    has_key = mask.any(dim=-1)  # (batch|1, 1, q)
    all_allowed = bool(has_key.all()) and bool(mask.all())
    fused = _fused_kernel(backend, q.device)
    if fused is not None:
        out, lse = fused(q, k, v, None if all_allowed else mask, scaling, groups)
    else:
        out, lse = explicit_attention(q, k, v, None if all_allowed else mask, scaling, groups)
    if not all_allowed:
        out = out.masked_fill(~has_key[..., None], 0.0)
        lse = lse.float().masked_fill(~has_key, float("-inf"))
    return out, lse.float()


def _fused_kernel(backend, device):
    if backend != "sdpa":
        return None
    if device.type == "cpu" and _CPU_FLASH is not None:
        return _cpu_flash
    if device.type == "cuda" and _CUDA_EFFICIENT is not None:
        return _cuda_efficient
    return None


def _bias(mask, dtype, align: int = 1):
    """0 where allowed, -inf elsewhere, shaped as `mask`; rows padded to `align` (a view cuts them back)."""
    k_len = mask.shape[-1]
    padded = -(-k_len // align) * align
    bias = torch.zeros(*mask.shape[:-1], padded, dtype=dtype, device=mask.device)[..., :k_len]
    return bias.masked_fill_(~mask, float("-inf"))


def _additive_mask(mask, q, k_len, align: int = 1, bias=None):
    """`_bias` expanded to (batch, heads, q, k); `bias`: one made already."""
    bias = _bias(mask, q.dtype, align) if bias is None else bias
    return bias.expand(q.shape[0], q.shape[1], q.shape[2], k_len)


def _cpu_flash(q, k, v, mask, scaling, groups, bias=None):
    bias = None if mask is None else _additive_mask(mask, q, k.shape[2], bias=bias)
    return _CPU_FLASH(q, k, v, 0.0, False, attn_mask=bias, scale=scaling)


def _cuda_efficient(q, k, v, mask, scaling, groups, bias=None):
    if groups > 1:
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    bias = None if mask is None else _additive_mask(mask, q, k.shape[2], _BIAS_ALIGNMENT, bias)
    out, lse = _CUDA_EFFICIENT(q, k, v, bias, True, 0.0, False, scale=scaling)[:2]
    return out, lse[..., : q.shape[2]]  # the kernel pads the log-sum-exp to a multiple of 32 queries


def explicit_attention(q, k, v, mask, scaling, groups, softcap: float | None = None):
    """Scores written out; a row with no allowed key gets output 0 and log-sum-exp -inf. `softcap`:
    Gemma 2's cap * tanh(score / cap), applied before the mask as its eager attention does."""
    if groups > 1:
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    scores = torch.matmul(q, k.transpose(-1, -2)).float() * scaling
    if softcap:
        scores = torch.tanh(scores / softcap) * softcap
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    weights = torch.exp(scores - lse.nan_to_num(neginf=0.0)[..., None]).to(v.dtype)
    return torch.matmul(weights, v), lse


class SharedMask:
    """A boolean mask (batch, 1, q, k) made ready once for the attention calls that share it (every
    layer of a row): which rows have a key, and its additive form for the device's fused kernel."""

    def __init__(self, allowed: torch.Tensor, dtype: torch.dtype):
        self.allowed = allowed
        self.has_key = allowed.any(dim=-1)
        self.dtype = dtype
        align = _BIAS_ALIGNMENT if allowed.device.type == "cuda" else 1
        self.bias = _bias(allowed, dtype, align) if _fused_kernel("sdpa", allowed.device) else None


def cpu_attention_with_lse(q, k, v, bias, scaling):
    """(output, log-sum-exp) of q (batch, heads, q, d) over k, v (batch, kv heads, k, d) under an
    additive float `bias` (q, k), from PyTorch's fused CPU kernel, gradients included; None where
    that kernel is missing or the tensors are not on the CPU."""
    if _CPU_FLASH is None or q.device.type != "cpu":
        return None
    return _CPU_FLASH(q, k, v, 0.0, False, attn_mask=bias.expand(q.shape[0], q.shape[1], -1, -1), scale=scaling)


def masked_attention_with_lse(q, k, v, mask, scaling, softcap: float | None = None):
    """(output, log-sum-exp) of q (batch, heads, q, d) over k, v (batch, kv heads, k, d) where `mask`
    (a boolean (batch, 1, q, k), or a `SharedMask`) allows, reading nothing back from the device (unlike
    `attend_with_lse`, which looks whether the mask allows everything): the fused kernel where one
    applies, the scores written out under a soft-cap. A row with no allowed key gets 0 and -inf."""
    if not isinstance(mask, SharedMask) or mask.dtype != q.dtype:
        mask = SharedMask(mask.allowed if isinstance(mask, SharedMask) else mask, q.dtype)
    groups = q.shape[1] // k.shape[1]
    fused = None if softcap else _fused_kernel("sdpa", q.device)
    if fused is not None:
        out, lse = fused(q, k, v, mask.allowed, scaling, groups, mask.bias)
    else:
        out, lse = explicit_attention(q, k, v, mask.allowed, scaling, groups, softcap)
    return out.masked_fill(~mask.has_key[..., None], 0.0), lse.float().masked_fill(~mask.has_key, float("-inf"))


def merge_partials(partials):
    """One softmax over the union of the parts' keys, from each part's output and log-sum-exp."""
    if len(partials) == 1:
        return partials[0][0]
    total = torch.logsumexp(torch.stack([lse for _, lse in partials]), dim=0)
    total = total.masked_fill(torch.isinf(total), 0.0)  # rows with no key at all (padding queries)
    merged = None
    for out, lse in partials:
        term = out * torch.exp(lse - total)[..., None].to(out.dtype)
        merged = term if merged is None else merged + term
    return merged


def _as_bool_mask(attention_mask):
    """transformers hands a boolean (True = attend) or additive float 4D mask, or None."""
    if attention_mask is None or attention_mask.dtype == torch.bool:
        return attention_mask
    return attention_mask > torch.finfo(attention_mask.dtype).min / 2


def _block_size(backend, batch, heads, q_len, kv_len) -> int:
    if backend == "eager":
        size = _EAGER_BLOCK_ELEMENTS // max(1, batch * heads * kv_len)
    else:
        size = min(_SDPA_BLOCK_QUERIES, _SDPA_MASK_ELEMENTS // max(1, batch * kv_len))
    return max(16, min(q_len, size))
