"""Which path computes the top keys: the Triton kernel, the CPU scan, or the caller's PyTorch path."""

from __future__ import annotations

import importlib.util

import torch

BACKENDS = ("auto", "triton", "scan", "torch")


def triton_has_top_k() -> bool:
    """The kernel needs `tl.topk` and `tl.join` (Triton 3.2 and later): an older Triton beside a
    user's torch keeps the PyTorch path instead of failing to compile."""
    if importlib.util.find_spec("triton") is None:
        return False
    import triton.language as tl

    return hasattr(tl, "topk") and hasattr(tl, "join")


def top_keys_path(backend: str, like: torch.Tensor) -> str:
    """ "triton", "scan" or "torch" for tensors like `like`.

    backend "auto": the kernel for CUDA tensors where Triton has what it needs, the C scan
    (`scan_top_keys.py`) for CPU tensors where it builds, else "torch"; "triton": the kernel (CUDA,
    or the Triton interpreter for CPU tensors); "scan": the C scan (CPU tensors, built or an error
    saying why not); "torch": the caller's PyTorch path."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    from . import scan_top_keys

    if backend == "auto":
        if like.is_cuda:
            return "triton" if triton_has_top_k() else "torch"
        return "scan" if like.device.type == "cpu" and scan_top_keys.available() else "torch"
    if backend == "scan":
        if like.device.type != "cpu":
            raise RuntimeError(f"backend='scan' runs on CPU tensors, not {like.device.type}")
        reason = scan_top_keys.unavailable_reason()
        if reason:
            raise RuntimeError(f"backend='scan' is not available: {reason}")
    return backend
