"""Stated-CLM's Fisher-weighted merge on the CPU: a small C function (`fisher_average_cpu.c`, built on
first use by `kernels/c_library.py`) that reads each merged run in place once, where the ATen path
of `merging.fisher_average` (the reference, and what the GPU runs) fills three sums as large as the
merged cache and scatter-adds into them.

Float32 only; `merging.fisher_average` sends a call here on the CPU unless the step is being
compiled (a C call is not traceable), no C compiler builds it, or `LM_EVAL_LONGMEM_C_KERNELS=0`.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import torch

from lm_eval_longmem.kernels.c_library import CLibrary


def _declare(library: ctypes.CDLL) -> None:
    average = library.fisher_average
    average.restype = ctypes.c_int
    pointer, size = ctypes.c_void_p, ctypes.c_int64
    average.argtypes = [pointer, pointer, pointer, size, size, size, size, size, size, pointer]


LIBRARY = CLibrary(Path(__file__).with_name("fisher_average_cpu.c"), _declare)


def takes(x: torch.Tensor, grad: torch.Tensor) -> bool:
    """The C function can merge these: float32 CPU tensors, outside a compiled graph, the library built."""
    return (
        x.device.type == "cpu"
        and x.dtype == grad.dtype == torch.float32
        and not torch.compiler.is_compiling()
        and LIBRARY.available()
    )


def cpu_fisher_average(x: torch.Tensor, grad: torch.Tensor, groups: torch.Tensor, num_groups: int) -> torch.Tensor:
    """`merging.fisher_average` on float32 CPU tensors: x, grad [S, L, Hkv, N, d], groups [L, N] (runs
    from 0 to num_groups - 1) -> [S, L, Hkv, num_groups, d]."""
    library = LIBRARY.library("the CPU Fisher merge")
    stacks, layers, heads, entries, dim = x.shape
    x, grad = x.detach().contiguous(), grad.detach().contiguous()
    groups = groups.to(dtype=torch.int64).contiguous()
    out = torch.empty(stacks, layers, heads, num_groups, dim, dtype=torch.float32, device="cpu")
    failed = library.fisher_average(
        x.data_ptr(),
        grad.data_ptr(),
        groups.data_ptr(),
        stacks,
        layers,
        heads,
        entries,
        dim,
        num_groups,
        out.data_ptr(),
    )
    if failed == -2:
        raise ValueError(f"merge groups must be runs numbered 0 to {num_groups - 1} in every layer")
    if failed:
        raise MemoryError("the CPU Fisher merge could not allocate its sums")
    return out
