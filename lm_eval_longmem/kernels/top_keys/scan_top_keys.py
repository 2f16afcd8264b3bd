"""The top keys on a CPU: ATen's q.k in score tiles that stay in cache, each tile ranked into every
query's running best k by a small C scan (`scan_top_keys.c`), instead of ATen's `topk`.

On a 2-core EPYC, `topk` costs about as much as the q.k that made the scores (it copies each row into
(value, index) pairs before sorting part of it), and the tiles' candidates then need a merge. The
scan reads a tile once and keeps each query's best k across the tiles, so there is nothing to
merge; LongCache's recall at 16k tokens spends most of its ranking time there (docs/kernels.md).

The C file is compiled once per machine with the system's C compiler (`$CC`, else `cc` or `gcc`)
into the cache directory (`common/paths.cache_dir`), under a name that hashes the source, the
compiler and the flags, and loaded with ctypes; x86 builds carry AVX-512, AVX2 and plain versions
and pick one at load time, so a cache shared by a cluster's nodes works on each. Where nothing
compiles (no compiler, a failed build) `available()` is False and the callers keep their PyTorch
path; `LM_EVAL_LONGMEM_CPU_SCAN=0` asks for that path on purpose.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
from pathlib import Path

import torch

SWITCH_ENV = "LM_EVAL_LONGMEM_CPU_SCAN"  # "0": never use the scan
SOURCE = Path(__file__).with_name("scan_top_keys.c")
FLAGS = ("-O3", "-std=gnu11", "-shared", "-fPIC")
SCORE_BYTES = 8 * 2**20  # float32 scores of one tile: stays in a CPU's last-level cache
KEY_TILE = 2048  # keys of one tile


def available() -> bool:
    """The scan is built (or was already) and not switched off."""
    return os.environ.get(SWITCH_ENV, "1") != "0" and not isinstance(_library(), str)


def unavailable_reason() -> str | None:
    """Why `available()` is False, or None."""
    if os.environ.get(SWITCH_ENV, "1") == "0":
        return f"{SWITCH_ENV}=0"
    built = _library()
    return built if isinstance(built, str) else None


@functools.cache
def _library() -> ctypes.CDLL | str:
    """The loaded library, or the reason it could not be built (once per process)."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        return "no C compiler found (set CC, or install cc/gcc)"
    from lm_eval_longmem.common.paths import cache_dir

    identity = hashlib.sha256(
        SOURCE.read_bytes() + repr((compiler, FLAGS, platform.machine(), platform.system())).encode()
    ).hexdigest()[:16]
    built = cache_dir("kernels") / f"scan_top_keys-{identity}.so"
    if not built.exists():
        partial = built.with_name(f"{built.name}.{os.getpid()}.partial")
        try:
            finished = subprocess.run(
                [compiler, *FLAGS, str(SOURCE), "-o", str(partial), "-lm"], capture_output=True, text=True, timeout=120
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"{compiler} could not build {SOURCE.name}: {error}"
        if finished.returncode != 0:
            partial.unlink(missing_ok=True)
            return f"{compiler} could not build {SOURCE.name}: {finished.stderr.strip()[-500:]}"
        os.replace(partial, built)  # atomic: another process building the same file meanwhile is harmless
    try:
        library = ctypes.CDLL(str(built))
    except OSError as error:
        return f"could not load {built}: {error}"
    scan = library.running_top_keys
    scan.restype = ctypes.c_int
    pointer, size = ctypes.c_void_p, ctypes.c_int64
    scan.argtypes = [pointer, size, size, pointer, size, size, size, pointer, pointer]
    return library


def scan_top_keys(
    queries: torch.Tensor, keys: torch.Tensor, visible: torch.Tensor, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """`reference_top_keys` on CPU tensors: (scores, key indices) [H, R, k], best first, float32; the
    earlier of equal scores; slots beyond a query's `visible[r]` keys are -inf (index 0).

    queries [H, R, d]; keys [Hkv, W, d] (query head h reads key head h // (H // Hkv)); visible [R]."""
    library = _library()
    if isinstance(library, str):
        raise RuntimeError(f"the CPU top-keys scan is not available: {library}")
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
