"""Which path computes the top keys: the Triton kernel or the caller's PyTorch path."""

from __future__ import annotations

import importlib.util

import torch

BACKENDS = ("auto", "triton", "torch")


def triton_has_top_k() -> bool:
    """The kernel needs `tl.topk` and `tl.join` (Triton 3.2 and later): an older Triton beside a
    user's torch keeps the PyTorch path instead of failing to compile."""
    if importlib.util.find_spec("triton") is None:
        return False
    import triton.language as tl

    return hasattr(tl, "topk") and hasattr(tl, "join")


def use_triton(backend: str, like: torch.Tensor) -> bool:
    """backend "auto": the kernel for CUDA tensors where Triton has what it needs; "triton": the
    kernel (CUDA, or the Triton interpreter for CPU tensors); "torch": never."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        return like.is_cuda and triton_has_top_k()
    return backend == "triton"
