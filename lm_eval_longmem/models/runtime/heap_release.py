"""Give freed C-heap pages back to the OS while a long input is fed piece by piece (CPU, glibc).

After its first large free, glibc raises its mmap threshold (up to 32 MB), so a piece's
activations are then carved from the heap; freed, they stay resident, and pieces of different
sizes fragment the heap further. The resident set of a bounded method then grew with the
number of pieces, i.e. with the input (measured through `lm_eval`: docs/benchmarks.md).
`malloc_trim(0)` returns every free page, at about 2 ms per call on a 1 GB process, so it runs
once per `RELEASE_EVERY_TOKENS` tokens, not per piece. A no-op off glibc and on accelerators,
whose allocators are their own.
"""

from __future__ import annotations

import ctypes
import functools

import torch

RELEASE_EVERY_TOKENS = 512


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):  # not glibc (macOS, musl, Windows)
        return None


class HeapRelease:
    """Counts the tokens a loop has fed and releases the free heap every `every` of them."""

    def __init__(self, every: int = RELEASE_EVERY_TOKENS):
        self.every = every
        self.pending = 0

    def fed(self, tokens: int, device: torch.device | str) -> None:
        self.pending += tokens
        if self.pending < self.every or torch.device(device).type != "cpu":
            return
        self.pending = 0
        trim = _malloc_trim()
        if trim is not None:
            trim(0)
