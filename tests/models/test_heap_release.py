"""Freed heap pages go back to the OS every RELEASE_EVERY_TOKENS fed tokens, not before: without
that, a bounded method's resident set grew with the number of pieces of its input."""

import ctypes
import platform
import re

import pytest
import torch

from lm_eval_longmem.models.runtime.heap_release import RELEASE_EVERY_TOKENS, HeapRelease

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's"
)


def resident_mib() -> float:
    with open("/proc/self/status") as fh:
        return int(re.search(r"VmRSS:\s+(\d+)", fh.read()).group(1)) / 1024


def leave_free_heap(mib: int = 128) -> torch.Tensor:
    """Free `mib` MiB of 2 MiB tensors carved from the heap, below one kept alive so glibc's own
    top-of-heap trim cannot return them; returns the one kept."""
    ctypes.CDLL(None).mallopt(-3, 4 * 2**20)  # M_MMAP_THRESHOLD: 2 MiB blocks come from the heap, as after a big free
    blocks = [torch.ones(2**19) for _ in range(mib // 2)]
    keep = torch.ones(2**19)
    del blocks
    return keep


def test_free_heap_is_released_once_enough_tokens_were_fed():
    keep = leave_free_heap()
    release = HeapRelease()
    before = resident_mib()
    release.fed(RELEASE_EVERY_TOKENS - 1, "cpu")
    assert resident_mib() > before - 16  # not yet
    release.fed(1, "cpu")
    assert resident_mib() < before - 96  # most of the 128 MiB went back
    assert keep.sum() == 2**19


def test_no_release_for_an_accelerator_device():
    keep = leave_free_heap()
    before = resident_mib()
    HeapRelease(every=1).fed(10, "meta")
    assert resident_mib() > before - 16
    del keep
    HeapRelease(every=1).fed(1, "cpu")  # leave the heap as the next test expects it
