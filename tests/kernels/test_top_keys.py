"""The top keys' reference against a hand-computed case and against an independent implementation
(the CPU's tiled path, `models/bounded_cache/tiled_top_k.py`), and the choice of path. The CPU scan
has its own file (test_top_keys_scan.py), as the Triton kernel has."""

from __future__ import annotations

import pytest
import torch

from lm_eval_longmem.kernels.top_keys import reference_top_keys, top_keys_path, triton_has_top_k
from lm_eval_longmem.kernels.top_keys.scan_top_keys import SWITCH_ENV
from lm_eval_longmem.models.bounded_cache.tiled_top_k import top_keys


def test_the_reference_keeps_the_earlier_of_equal_scores_and_leaves_missing_slots_empty():
    """By hand: one query, keys scoring 1, 3, 3, 2, 3; it sees the first 4, then only 1."""
    queries = torch.tensor([[[1.0]]])
    keys = torch.tensor([[[1.0], [3.0], [3.0], [2.0], [3.0]]])
    value, index = reference_top_keys(queries, keys, torch.tensor([4]), 3)
    assert value.tolist() == [[[3.0, 3.0, 2.0]]] and index.tolist() == [[[1, 2, 3]]]
    value, index = reference_top_keys(queries, keys, torch.tensor([1]), 3)
    assert value[0, 0, 0] == 1.0 and torch.isinf(value[0, 0, 1:]).all() and index[0, 0, 0] == 0


@pytest.mark.parametrize("ties", [False, True])
def test_the_reference_picks_the_tiled_paths_keys(monkeypatch, ties):
    """Every query seeing every key (the tiled path's case), grouped-query heads, keys in tiles of 7."""
    from lm_eval_longmem.models.bounded_cache import tiled_top_k

    monkeypatch.setattr(tiled_top_k, "CPU_SCORE_BYTES", 0)
    monkeypatch.setattr(tiled_top_k, "KEY_TILE", 7)
    generator = torch.Generator().manual_seed(int(ties))
    if ties:  # integer scores, most of them tied: the sets of the earliest keys agree, whatever their order
        queries = torch.randint(-2, 3, (4, 9, 8), generator=generator).float()
        distinct = torch.randint(-2, 3, (2, 5, 8), generator=generator).float()
        keys = distinct[:, torch.randint(0, 5, (40,), generator=generator)]
    else:
        queries, keys = torch.randn(4, 9, 8, generator=generator), torch.randn(2, 40, 8, generator=generator)
    value, index = reference_top_keys(queries, keys, torch.full((9,), 40), 4)
    tiled_value, tiled_index = top_keys(queries, keys.repeat_interleave(2, dim=0), 4)
    assert torch.equal(index.sort(dim=-1).values, tiled_index.sort(dim=-1).values)
    torch.testing.assert_close(value, tiled_value, rtol=1e-6, atol=1e-6)


def test_the_path_is_chosen_by_device_and_triton(monkeypatch):
    """auto: the kernel on CUDA where Triton has `tl.topk` (3.2 and later), the C scan on the CPU
    unless switched off, else the caller's PyTorch path; a misspelled backend is one message naming
    the valid ones."""
    on_cpu = torch.zeros(1)
    assert top_keys_path("auto", on_cpu) == "scan"  # this machine has a C compiler
    assert top_keys_path("torch", on_cpu) == "torch" and top_keys_path("triton", on_cpu) == "triton"
    monkeypatch.setenv(SWITCH_ENV, "0")
    assert top_keys_path("auto", on_cpu) == "torch"
    with pytest.raises(RuntimeError, match=f"backend='scan' is not available: {SWITCH_ENV}=0"):
        top_keys_path("scan", on_cpu)
    assert triton_has_top_k()  # the pinned triton
    tl = pytest.importorskip("triton.language")
    monkeypatch.delattr(tl, "topk")
    assert not triton_has_top_k()
    with pytest.raises(ValueError, match=r"backend must be one of \('auto', 'triton', 'scan', 'torch'\), got 'cuda'"):
        top_keys_path("cuda", on_cpu)
