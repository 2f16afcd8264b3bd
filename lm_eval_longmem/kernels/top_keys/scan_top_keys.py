"""The top keys on a CPU: ATen's q.k in score tiles that stay in cache, each tile ranked into every
query's running best k by a small C scan (`scan_top_keys.c`), instead of ATen's `topk`.

On a 2-core EPYC, `topk` costs about as much as the q.k that made the scores (it copies each row into
(value, index) pairs before sorting part of it), and the tiles' candidates then need a merge. The
scan reads a tile once and keeps each query's best k across the tiles, so there is nothing to
merge; LongCache's recall at 16k tokens spends most of its ranking time there (docs/kernels.md).

The C file is built on first use and loaded with ctypes (`kernels/c_library.py`). Where nothing
compiles (no compiler, a failed build) `available()` is False and the callers keep their PyTorch
path; `LM_EVAL_LONGMEM_C_KERNELS=0` asks for that path on purpose.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import torch

from lm_eval_longmem.kernels.c_library import SWITCH_ENV, CLibrary

__all__ = ["SWITCH_ENV", "available", "scan_top_keys", "unavailable_reason"]

SCORE_BYTES = 8 * 2**20  # float32 scores of one tile: stays in a CPU's last-level cache
KEY_TILE = 2048  # keys of one tile


def _declare(library: ctypes.CDLL) -> None:
    scan = library.running_top_keys
    scan.restype = ctypes.c_int
    pointer, size = ctypes.c_void_p, ctypes.c_int64
    scan.argtypes = [pointer, size, size, pointer, size, size, size, pointer, pointer]


LIBRARY = CLibrary(Path(__file__).with_name("scan_top_keys.c"), _declare)
available = LIBRARY.available
unavailable_reason = LIBRARY.unavailable_reason


def scan_top_keys(
    queries: torch.Tensor, keys: torch.Tensor, visible: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """`reference_top_keys` on CPU tensors: (scores, key indices) [H, R, k], best first, float32; the
    earlier of equal scores; slots beyond a query's `visible[r]` keys are -inf (index 0).

    queries [H, R, d]; keys [Hkv, W, d] (query head h reads key head h // (H // Hkv)); visible [R]."""
    library = LIBRARY.library("the CPU top-keys scan")
    heads, rows, _ = queries.shape
    width = keys.shape[1]
    queries = queries.float()
    keys_t = keys.float().repeat_interleave(heads // keys.shape[0], dim=0).transpose(1, 2)  # [H, d, W]
    visible = visible.to(device="cpu", dtype=torch.int64).clamp(max=width).contiguous()
    seen = visible.numpy()  # the CPU tensor's own memory: no copy, no dispatched op
    cpu = {"device": "cpu"}  # named: a caller's default device may be another
    values = torch.full((heads, rows, k), float("-inf"), dtype=torch.float32, **cpu)
    indices = torch.zeros(heads, rows, k, dtype=torch.int64, **cpu)
    if k <= 0 or width == 0:
        return values, indices
    row_run = max(1, min(rows, SCORE_BYTES // (4 * heads * KEY_TILE)))
    tile = torch.empty(
        heads * row_run * min(KEY_TILE, width), dtype=torch.float32, **cpu
    )  # reused: a fresh one is page-faulted in each time
    run_values = torch.empty(
        heads * row_run * k, dtype=torch.float32, **cpu
    )  # each run's running best, [H, rows of the run, k]
    run_indices = torch.empty(heads * row_run * k, dtype=torch.int64, **cpu)
    for first_row in range(0, rows, row_run):
        last_row = min(rows, first_row + row_run)
        count = last_row - first_row
        widest = int(seen[first_row:last_row].max())
        best_values = run_values[: heads * count * k].view(heads, count, k).fill_(float("-inf"))
        best_indices = run_indices[: heads * count * k].view(heads, count, k).zero_()
        for first_key in range(0, widest, KEY_TILE):
            tile_width = min(KEY_TILE, widest - first_key)
            scores = tile[: heads * count * tile_width].view(heads, count, tile_width)
            torch.bmm(queries[:, first_row:last_row], keys_t[:, :, first_key : first_key + tile_width], out=scores)
            failed = library.running_top_keys(
                scores.data_ptr(),
                heads * count,
                tile_width,
                visible.data_ptr() + 8 * first_row,  # row h * count + i reads visible[first_row + i]
                count,
                first_key,
                k,
                best_values.data_ptr(),
                best_indices.data_ptr(),
            )
            if failed:
                raise MemoryError("the CPU top-keys scan could not allocate its run maxima")
        values[:, first_row:last_row] = best_values
        indices[:, first_row:last_row] = best_indices
    return values, indices
