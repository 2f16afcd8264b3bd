"""Public entry point: pick a backend for the grouped softmax.

Why a row kernel and not the biased-attention kernel of `forgetting_attention/`: that kernel takes
rank-one biases (``q_bias_i - k_bias_j``), and the grouped softmax's bias
``beta_{i,b} = s_{i,l_b} - logsumexp_{j in b} s_ij`` depends on the query and the block together,
through the scores themselves. A landmark model's attention rows are short (its training length
plus the retrieved blocks), so the score rows fit one tile each, and a kernel over the rows is the
simple fast path; the matrix products around it stay PyTorch's.
"""

from __future__ import annotations

import importlib.util
import os
import warnings

import torch

from .block_bias import block_bias_grouped_softmax
from .checks import check_grouped_softmax_args
from .reference import reference_grouped_softmax

BACKENDS = ("auto", "triton", "torch", "reference")
# Cells of one row's [blocks, B] tile above which the Triton path would spill even at 16 warps
# (compiled ahead of time: benchmarks/kernel_resources.py): longer rows take the PyTorch path. A block
# size that is not a multiple of 16 loses vector loads, and its rows spill past 4,096 cells (at 32
# warps, 64 registers: 8-16 B at 8,192 cells; 56-536 B at 16,384). A landmark model's rows are far
# shorter: 512 + 6 * 64 keys is 1,024 cells, 512 + 6 * 51 keys 2,048.
TRITON_MAX_TILE = 16384
TRITON_MAX_TILE_UNALIGNED = 4096


def max_tile(block_size: int) -> int:
    """The longest row tile the Triton path takes for this block size (cells)."""
    return TRITON_MAX_TILE if block_size % 16 == 0 else TRITON_MAX_TILE_UNALIGNED


_warned: set[str] = set()


def _triton_ready(scores: torch.Tensor, block_size: int) -> str | None:
    """Why the Triton path cannot take these scores, or None."""
    if importlib.util.find_spec("triton") is None:
        return "triton is not installed"
    from .triton_function import tile_shape

    blocks, pad = tile_shape(scores.shape[-1], block_size)
    if blocks * pad > max_tile(block_size):
        return (
            f"a row of {scores.shape[-1]} keys in blocks of {block_size} is longer than one tile "
            f"({max_tile(block_size)} cells)"
        )
    return None


def choose_backend(backend: str, scores: torch.Tensor, block_size: int) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend in ("torch", "reference"):
        return backend
    interpreted = os.environ.get("TRITON_INTERPRET", "").lower() in ("1", "true", "on", "yes")
    if backend == "auto" and not scores.is_cuda:
        return "torch"
    if backend == "triton" and not scores.is_cuda and not interpreted:
        raise RuntimeError("backend='triton' needs CUDA tensors (or TRITON_INTERPRET=1 to run the kernels on CPU)")
    reason = _triton_ready(scores, block_size)
    if reason is None:
        return "triton"
    if backend == "triton":
        raise RuntimeError(f"backend='triton': {reason}")
    if reason not in _warned:
        _warned.add(reason)
        warnings.warn(f"grouped_softmax: {reason}; using the PyTorch path", stacklevel=3)
    return "torch"


def grouped_softmax(scores: torch.Tensor, block_size: int, *, backend: str = "auto") -> torch.Tensor:
    """Landmark Attention's grouped softmax of ``scores [..., Tq, Tk]`` (see `reference.py`).

    Keys come in blocks of ``block_size`` whose last position is the landmark; the queries are the
    last Tq key positions. Returns the attention weights (landmark columns exactly 0), same shape
    and dtype, differentiable in every backend."""
    check_grouped_softmax_args(scores, block_size)
    chosen = choose_backend(backend, scores, block_size)
    if chosen == "reference":
        return reference_grouped_softmax(scores, block_size)
    if chosen == "torch":
        return block_bias_grouped_softmax(scores, block_size)
    from .triton_function import triton_grouped_softmax

    return triton_grouped_softmax(scores, block_size)
