"""Memory-bounded PyTorch path: query blocks against only the keys they can reach.

Never builds the Tq x Tk score matrix: each block of queries meets the key range
``[min key_lo over the block, last causal key of the block]``, as a batched matmul in fp32.
Backward recomputes the block's probabilities from the saved log-sum-exp (FlashAttention style),
so training on CPU keeps O(block * Tk) memory too. Works on any device; it is the CPU default and
the fallback for shapes the Triton kernel does not cover.
"""

from __future__ import annotations

import torch

from .common import keeps_fp32_output, visible_keys

DEFAULT_QUERY_BLOCK = 256


def _split_groups(x: torch.Tensor, kv_heads: int) -> torch.Tensor:
    """``[B, T, HQ, ...]`` -> ``[B, H, G, T, ...]`` so a kv head meets its query heads by broadcasting."""
    batch, length, q_heads = x.shape[:3]
    x = x.reshape(batch, length, kv_heads, q_heads // kv_heads, *x.shape[3:])
    return x.movedim(1, 3)


def _merge_groups(x: torch.Tensor) -> torch.Tensor:
    """Inverse of ``_split_groups``."""
    x = x.movedim(3, 1)
    return x.reshape(x.shape[0], x.shape[1], x.shape[2] * x.shape[3], *x.shape[4:])


class _BlockPlan:
    """The query blocks, and for each the key range and visibility mask it needs."""

    def __init__(self, num_queries, num_keys, key_lo, block, device):
        self.num_queries, self.num_keys, self.key_lo, self.device = num_queries, num_keys, key_lo, device
        self.blocks = [range(i, min(i + block, num_queries)) for i in range(0, num_queries, block)]

    def keys_for(self, rows: range) -> range:
        first = 0 if self.key_lo is None else int(self.key_lo[:, rows.start : rows.stop].min())
        last = rows.stop + self.num_keys - self.num_queries
        return range(min(first, last), last)

    def mask_in_place(self, scores: torch.Tensor, rows: range, cols: range) -> torch.Tensor:
        """Set invisible logits of ``scores [B, H, G, rows, cols]`` to -inf. Only the leading
        columns (below some row's ``key_lo``) and the trailing ones (past the first row's causal
        limit) can be invisible, so the mask is built for those strips alone."""
        fully_visible_from = cols.start
        if self.key_lo is not None:
            fully_visible_from = min(int(self.key_lo[:, rows.start : rows.stop].max()), cols.stop)
        fully_visible_to = max(min(rows.start + self.num_keys - self.num_queries + 1, cols.stop), fully_visible_from)
        for strip in (range(cols.start, fully_visible_from), range(fully_visible_to, cols.stop)):
            if len(strip):
                visible = visible_keys(self.key_lo, rows, strip, self.num_queries, self.num_keys, self.device)
                part = scores[..., strip.start - cols.start : strip.stop - cols.start]
                part.masked_fill_(~visible[:, None, None], float("-inf"))
        return scores


def _block_logits(qs, ks, qb, kb, scale, plan, rows, cols):
    """Masked fp32 logits ``[B, H, G, rows, cols]`` of one query block (a fresh tensor)."""
    queries = qs[:, :, :, rows.start : rows.stop].float() * scale
    scores = torch.matmul(queries, ks[:, :, :, cols.start : cols.stop].float().transpose(-1, -2))
    # The bias difference first: FoX's cumulative gates are large and close; rounding the scores
    # at their magnitude (adding one, then subtracting the other) would lose the difference.
    scores.add_(qb[..., rows.start : rows.stop, None] - kb[..., None, cols.start : cols.stop])
    return plan.mask_in_place(scores, rows, cols)


class BlockedBiasedAttention(torch.autograd.Function):
    """Autograd function over ``[B, T, H*, D]`` tensors; saves only the output and log-sum-exp."""

    @staticmethod
    def forward(ctx, q, k, v, q_bias, k_bias, scale, key_lo, block):
        kv_heads = k.shape[2]
        qs, qb, kb = (
            _split_groups(q, kv_heads),
            _split_groups(q_bias.float(), kv_heads),
            _split_groups(k_bias.float(), kv_heads),
        )
        ks, vs = k.movedim(1, 2)[:, :, None], v.movedim(1, 2)[:, :, None]
        plan = _BlockPlan(q.shape[1], k.shape[1], key_lo, block, q.device)
        out = torch.zeros(qs.shape, dtype=torch.float32, device=q.device)
        lse = torch.full(qb.shape, float("inf"), dtype=torch.float32, device=q.device)
        for rows in plan.blocks:
            cols = plan.keys_for(rows)
            if len(cols) == 0:
                continue
            scores = _block_logits(qs, ks, qb, kb, scale, plan, rows, cols)
            row_max = scores.amax(dim=-1, keepdim=True)
            row_max = row_max.masked_fill(row_max == float("-inf"), 0.0)
            weights = scores.sub_(row_max).exp_()
            total = weights.sum(dim=-1, keepdim=True)
            out[:, :, :, rows.start : rows.stop] = torch.matmul(
                weights, vs[:, :, :, cols.start : cols.stop].float()
            ) / total.clamp_min(1e-30)
            block_lse = (row_max + total.log()).squeeze(-1)
            lse[..., rows.start : rows.stop] = block_lse.masked_fill(total.squeeze(-1) == 0, float("inf"))
        out = _merge_groups(out)
        keep_fp32_output = keeps_fp32_output(q.dtype, ctx.needs_input_grad[3] or ctx.needs_input_grad[4])
        ctx.save_for_backward(q, k, v, q_bias, k_bias, out if keep_fp32_output else out.to(q.dtype), lse, key_lo)
        ctx.scale, ctx.block = scale, block
        return out.to(q.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, q_bias, k_bias, out, lse, key_lo = ctx.saved_tensors
        scale, kv_heads = ctx.scale, k.shape[2]
        qs, qb, kb = (
            _split_groups(q, kv_heads),
            _split_groups(q_bias.float(), kv_heads),
            _split_groups(k_bias.float(), kv_heads),
        )
        ks, vs = k.movedim(1, 2)[:, :, None], v.movedim(1, 2)[:, :, None]
        dos = _split_groups(grad_out.float(), kv_heads)
        delta = _split_groups((grad_out.float() * out.float()).sum(-1), kv_heads)
        plan = _BlockPlan(q.shape[1], k.shape[1], key_lo, ctx.block, q.device)
        dq = torch.zeros(qs.shape, dtype=torch.float32, device=q.device)
        dk = torch.zeros(ks.shape[:2] + ks.shape[3:], dtype=torch.float32, device=q.device)
        dv = torch.zeros_like(dk)
        dkb = torch.zeros(kb.shape, dtype=torch.float32, device=q.device)
        dqb = torch.zeros(qb.shape, dtype=torch.float32, device=q.device)
        for rows in plan.blocks:
            cols = plan.keys_for(rows)
            if len(cols) == 0:
                continue
            r, c = slice(rows.start, rows.stop), slice(cols.start, cols.stop)
            probs = _block_logits(qs, ks, qb, kb, scale, plan, rows, cols).sub_(lse[..., r, None]).exp_()
            d_probs = torch.matmul(dos[:, :, :, r], vs[:, :, :, c].float().transpose(-1, -2))
            d_scores = d_probs.sub_(delta[..., r, None]).mul_(probs)
            dv[:, :, c] += torch.matmul(probs.transpose(-1, -2), dos[:, :, :, r]).sum(2)
            dk[:, :, c] += torch.matmul(d_scores.transpose(-1, -2), qs[:, :, :, r].float()).sum(2) * scale
            dq[:, :, :, r] = torch.matmul(d_scores, ks[:, :, :, c].float()) * scale
            dkb[..., c] -= d_scores.sum(-2)
            dqb[..., r] = d_scores.sum(-1)
        grads = (
            _merge_groups(dq).to(q.dtype),
            dk.movedim(2, 1).to(k.dtype),
            dv.movedim(2, 1).to(v.dtype),
            _merge_groups(dqb).to(q_bias.dtype),
            _merge_groups(dkb).to(k_bias.dtype),
        )
        return grads + (None, None, None)


def blocked_biased_attention(q, k, v, q_bias, k_bias, scale, key_lo, block=None):
    """Validated inputs in; ``[B, Tq, HQ, D]`` out. ``key_lo`` from ``common.key_window_bounds``;
    ``block`` queries per step (default ``DEFAULT_QUERY_BLOCK``, read at call time)."""
    return BlockedBiasedAttention.apply(q, k, v, q_bias, k_bias, scale, key_lo, block or DEFAULT_QUERY_BLOCK)
