"""Landmark Attention's retrieval attention on the CPU: a small C function (`retrieval_cpu.c`, built
on first use by `kernels/c_library.py`) that reads each query's chosen blocks where they lie, as the
Triton kernel does on a GPU, instead of the PyTorch path's gathers and one-row products.

Float32, forward only (scoring runs without gradients); the rows (query head, query) are split
over torch's intra-op threads. `retrieval_attention.py` dispatches here on the CPU by default and
keeps its PyTorch path as the reference and for everything else (another dtype, gradients, no C
compiler, `LM_EVAL_LONGMEM_C_KERNELS=0`).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import torch

from lm_eval_longmem.kernels.c_library import CLibrary


def _declare(library: ctypes.CDLL) -> None:
    attend = library.retrieval_attention
    attend.restype = ctypes.c_int
    pointer, size, real = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float
    attend.argtypes = [pointer] * 9 + [size] * 9 + [real, real, size]


LIBRARY = CLibrary(Path(__file__).with_name("retrieval_cpu.c"), _declare)


def cpu_unavailable_reason(tensors, needs_grad: bool) -> str | None:
    """Why the C path cannot compute a call on these tensors (retrieval_attention's, in its order), or
    None: it takes float32 CPU tensors, without gradients, where the library builds."""
    if tensors[0].device.type != "cpu":
        return f"it runs on CPU tensors, not {tensors[0].device.type}"
    dtypes = {t.dtype for t in tensors[:6]}
    if dtypes != {torch.float32}:
        return f"it takes float32, not {', '.join(sorted(str(d) for d in dtypes))}"
    if needs_grad:
        return "it computes no gradients"
    return LIBRARY.unavailable_reason()


def cpu_retrieval_attention(
    slot_queries: torch.Tensor,
    window_queries: torch.Tensor,
    window_keys: torch.Tensor,
    window_values: torch.Tensor,
    store_keys: torch.Tensor,
    store_values: torch.Tensor,
    chosen: torch.Tensor,
    slot_valid: torch.Tensor,
    window: int,
    scaling: float,
    softcap: float | None = None,
    first_place: int = 0,
) -> torch.Tensor:
    """`retrieval_attention` (same arguments, see its module) on CPU float32 tensors: [H, N, d].

    `first_place`: the window keys and values hold `first_place` more rows than there are queries, and
    query n's own key is row first_place + n (0: the queries are whole windows, as in the module; the
    window's fill before a piece of one window, as `models/landmark/sequence.py` feeds them)."""
    library = LIBRARY.library("the CPU retrieval attention")
    heads, length, slots, dim = slot_queries.shape
    kv_heads, blocks, block_size = store_keys.shape[:3]
    floats = [
        t.detach().contiguous()
        for t in (slot_queries, window_queries, window_keys, window_values, store_keys, store_values)
    ]
    if any(t.dtype != torch.float32 or t.device.type != "cpu" for t in floats):
        raise TypeError("the CPU retrieval attention takes float32 CPU tensors")
    if block_size < 2:
        raise ValueError(f"blocks of {block_size} hold no key beside the landmark")
    if window_keys.shape[1] != first_place + length or window_values.shape[1] != first_place + length:
        raise ValueError(
            f"{length} queries from window place {first_place} need {first_place + length} window keys and values, "
            f"got {window_keys.shape[1]} and {window_values.shape[1]}"
        )
    chosen = chosen.to(dtype=torch.int64).contiguous()
    slot_valid = slot_valid.to(dtype=torch.bool).contiguous()
    out = torch.empty(heads, length, dim, dtype=torch.float32, device="cpu")
    failed = library.retrieval_attention(
        *(t.data_ptr() for t in floats),
        chosen.data_ptr(),
        slot_valid.data_ptr(),
        out.data_ptr(),
        heads,
        kv_heads,
        length,
        slots,
        dim,
        blocks,
        block_size,
        window,
        first_place,
        scaling,
        softcap or 0.0,
        torch.get_num_threads(),
    )
    if failed == -2:
        raise IndexError(f"a chosen block is outside the store of {blocks} blocks")
    if failed:
        raise MemoryError("the CPU retrieval attention could not allocate its scratch memory")
    return out
