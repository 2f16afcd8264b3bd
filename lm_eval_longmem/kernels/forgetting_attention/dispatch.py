"""Public entry points: pick a backend, normalise arguments, build FoX's cumulative gates."""

from __future__ import annotations

import importlib.util
import warnings

import torch

from .blocked import blocked_biased_attention
from .common import check_attention_args, default_scale, fp32, key_window_bounds, triton_interpreter_enabled
from .reference import reference_biased_attention

BACKENDS = ("auto", "triton", "blocked", "reference")
TRITON_HEAD_DIMS = (16, 32, 64, 128)
TRITON_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

_warned_reasons: set[str] = set()


def _warn_once(reason: str) -> None:
    if reason not in _warned_reasons:
        _warned_reasons.add(reason)
        warnings.warn(f"forgetting_attention: {reason}; using the blocked PyTorch path", stacklevel=3)


def triton_available() -> bool:
    return importlib.util.find_spec("triton") is not None


def triton_unsupported_reason(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> str | None:
    """Why the Triton kernel cannot take these tensors, or None when it can."""
    head_dim = q.shape[-1]
    if head_dim not in TRITON_HEAD_DIMS:
        return f"head dim {head_dim} is not one of {TRITON_HEAD_DIMS}"
    if q.dtype not in TRITON_DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
        return f"dtypes q={q.dtype}, k={k.dtype}, v={v.dtype} must be one of fp16/bf16/fp32 and equal"
    return None


def choose_backend(backend: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> str:
    """Resolve ``backend`` to "triton", "blocked" or "reference"; warns once per fallback reason."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend in ("blocked", "reference"):
        return backend
    if backend == "auto" and not q.is_cuda:
        return "blocked"
    if backend == "triton" and not q.is_cuda and not triton_interpreter_enabled():
        raise RuntimeError("backend='triton' needs CUDA tensors (or TRITON_INTERPRET=1 to run the kernels on CPU)")
    if not triton_available():
        if backend == "triton":
            raise RuntimeError("backend='triton' needs the triton package")
        _warn_once("triton is not installed")
        return "blocked"
    reason = triton_unsupported_reason(q, k, v)
    if reason is not None:
        _warn_once(reason)
        return "blocked"
    return "triton"


def biased_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    q_bias: torch.Tensor,
    k_bias: torch.Tensor,
    *,
    scale: float | None = None,
    seq_start: torch.Tensor | None = None,
    cu_seqlens: torch.Tensor | None = None,
    backend: str = "auto",
) -> torch.Tensor:
    """Causal softmax attention with logits ``q.k * scale + q_bias_i - k_bias_j``.

    q ``[B, Tq, HQ, D]``; k, v ``[B, Tk, H, D]`` (HQ a multiple of H); q_bias ``[B, Tq, HQ]``,
    k_bias ``[B, Tk, HQ]`` (fp32). Queries are the last Tq of the Tk positions. ``seq_start [B]``
    masks left padding; ``cu_seqlens [N+1]`` packs sequences (B = 1, Tq = Tk).
    Returns ``[B, Tq, HQ, D]`` in q's dtype.
    """
    check_attention_args(q, k, v, q_bias, k_bias, seq_start, cu_seqlens)
    scale = default_scale(scale, q.shape[-1])
    chosen = choose_backend(backend, q, k, v)
    if chosen == "reference":
        return reference_biased_attention(
            q, k, v, q_bias, k_bias, scale=scale, seq_start=seq_start, cu_seqlens=cu_seqlens
        )
    bounds = key_window_bounds(q.shape[0], q.shape[1], k.shape[1], seq_start, cu_seqlens, q.device)
    q_bias, k_bias = fp32(q_bias), fp32(k_bias)
    if chosen == "blocked":
        return blocked_biased_attention(q, k, v, q_bias, k_bias, scale, None if bounds is None else bounds[0])
    from .parallel import triton_biased_attention

    return triton_biased_attention(q, k, v, q_bias, k_bias, scale, bounds)


def cumulative_log_fgate(
    log_fgate: torch.Tensor,
    *,
    seq_start: torch.Tensor | None = None,
    cu_seqlens: torch.Tensor | None = None,
) -> torch.Tensor:
    """``c = cumsum(log f)`` over time in fp32: ``[B, T, H] -> [B, T, H]``.

    Restarts at every packed sequence (so c stays small and exact), and ignores the gates of
    left-padding positions (they are zeroed), which are masked anyway. A decoding model keeps
    these values for its cached keys and extends them with ``c[:, -1:] + cumsum(new log f)``.
    """
    gates = fp32(log_fgate)
    if seq_start is not None:
        positions = torch.arange(gates.shape[1], device=gates.device)
        padding = positions[None, :] < seq_start.to(gates.device).reshape(-1, 1)
        gates = gates.masked_fill(padding[..., None], 0.0)
    if cu_seqlens is None:
        return _cumsum_over_time(gates)
    offsets = [int(x) for x in cu_seqlens]
    pieces = [_cumsum_over_time(gates[:, a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
    return torch.cat(pieces, dim=1)


def _cumsum_over_time(gates: torch.Tensor) -> torch.Tensor:
    """``gates.cumsum(dim=1)`` for ``[B, T, H]``, scanned along the innermost dimension.

    PyTorch's CUDA scan over an outer dimension gives each of the B x H columns one thread that
    walks all T steps, slower than the attention kernel it feeds (docs/benchmarks.md has the
    profile), and its backward, a reversed scan, is the same. Along the last dimension the scan
    is parallel.
    """
    return gates.transpose(1, 2).contiguous().cumsum(dim=-1).transpose(1, 2).contiguous()


def forgetting_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    log_fgate: torch.Tensor,
    *,
    scale: float | None = None,
    seq_start: torch.Tensor | None = None,
    cu_seqlens: torch.Tensor | None = None,
    backend: str = "auto",
) -> torch.Tensor:
    """FoX attention for prefill/training (Tq == Tk): logits ``q.k * scale + c_i - c_j``.

    ``log_fgate [B, T, HQ]`` is ``log f`` (e.g. ``logsigmoid`` of the gate logits); gradients
    flow to it through the cumulative sum. For decoding call ``biased_attention`` with the cached
    ``c`` (see ``cumulative_log_fgate``).
    """
    if q.shape[1] != k.shape[1]:
        raise ValueError("forgetting_attention is the Tq == Tk case; decode with biased_attention and cached c")
    if log_fgate.shape != q.shape[:3]:
        raise ValueError(f"log_fgate must be {tuple(q.shape[:3])}, got {tuple(log_fgate.shape)}")
    c = cumulative_log_fgate(log_fgate, seq_start=seq_start, cu_seqlens=cu_seqlens)
    return biased_attention(q, k, v, c, c, scale=scale, seq_start=seq_start, cu_seqlens=cu_seqlens, backend=backend)
