"""Token arrays cached as .npy files (corpus token streams, packed training data): written whole
(atomic_files.py) and checked when read, so a truncated, emptied or overwritten file is built
again after one warning instead of failing with a traceback or feeding wrong tokens."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from lm_eval_longmem.common.atomic_files import atomic_write, warn_rebuilding

logger = logging.getLogger(__name__)


def load_cached_array(path: Path, *, ndim: int = 1, mmap: bool = False) -> np.ndarray | None:
    """The integer array cached at `path`; None when there is none, or when it is damaged
    (then with a warning: the caller builds it again)."""
    if not path.is_file():
        return None
    try:
        array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except Exception as err:  # noqa: BLE001 - numpy says "truncated" many ways (ValueError, EOFError, OSError)
        problem = f"not a whole .npy file: {err}"
    else:
        problem = _token_array_problem(array, ndim)
        if problem is None:
            return array
    warn_rebuilding(path, problem, logger)
    return None


def save_cached_array(path: Path, array: np.ndarray) -> None:
    with atomic_write(path) as handle:
        np.save(handle, array, allow_pickle=False)


def _token_array_problem(array: np.ndarray, ndim: int) -> str | None:
    if array.ndim != ndim:
        return f"{array.ndim} dimension(s), expected {ndim}"
    if array.dtype.kind not in "iu":
        return f"dtype {array.dtype}, expected integers"
    return None
