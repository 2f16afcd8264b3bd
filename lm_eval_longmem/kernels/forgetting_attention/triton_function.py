"""Autograd wrapper that launches the Triton kernels (imported only when the Triton path runs)."""

from __future__ import annotations

import functools

import torch
import triton

from .delta_precision import keeps_fp32_output
from .split_decoding import DECODE_MAX_QUERIES, key_splits, split_length
from .split_merge_kernel import merge_split_outputs_triton
from .triton_backward import biased_attention_dkdv_kernel, biased_attention_dq_kernel, output_dot_grad_kernel
from .triton_common import LOG2E_HOST
from .triton_forward import biased_attention_forward_kernel

_DELTA_BLOCK = 64


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
    """Validated inputs in; ``bounds`` is ``visibility.key_window_bounds(...)`` (None: plain causal)."""
    key_lo, query_end = (None, None) if bounds is None else bounds
    return TritonBiasedAttention.apply(q, k, v, q_bias, k_bias, scale, key_lo, query_end)
