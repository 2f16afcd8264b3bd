"""The CPU's top keys (`kernels/top_keys/scan_top_keys.py` and its C scan) against the reference:
a hand case, random scores, integer scores full of ties, prefixes shorter than k, several tiles
and runs of queries; and what happens where nothing compiles."""

from __future__ import annotations

import pytest
import torch

from lm_eval_longmem.kernels.top_keys import reference_top_keys, top_keys_path
from lm_eval_longmem.kernels.top_keys import scan_top_keys as scan_module
from lm_eval_longmem.kernels.top_keys.scan_top_keys import scan_top_keys

pytestmark = pytest.mark.skipif(not scan_module.available(), reason="no C compiler builds the scan here")


def same_picks(queries, keys, visible, k):
    """The scan's and the reference's keys are the same where a key was picked (a slot left empty by
    a short prefix has an index of no meaning), and so are their scores up to the rounding of q.k
    computed in tiles (another GEMM blocking, another summation order)."""
    value, index = scan_top_keys(queries, keys, visible, k)
    expected_value, expected_index = reference_top_keys(queries, keys, visible, k)
    torch.testing.assert_close(value, expected_value, rtol=1e-6, atol=1e-6)
    picked = torch.isfinite(expected_value)
    assert torch.equal(index[picked], expected_index[picked])


def test_a_hand_case_keeps_the_earlier_of_equal_scores():
    """One query, keys scoring 1, 3, 3, 2, 3: it sees the first 4, then only 1, then none."""
    queries = torch.tensor([[[1.0], [1.0], [1.0]]])
    keys = torch.tensor([[[1.0], [3.0], [3.0], [2.0], [3.0]]])
    value, index = scan_top_keys(queries, keys, torch.tensor([4, 1, 0]), 3)
    assert value[0, 0].tolist() == [3.0, 3.0, 2.0] and index[0, 0].tolist() == [1, 2, 3]
    assert value[0, 1, 0] == 1.0 and index[0, 1, 0] == 0 and torch.isinf(value[0, 1, 1:]).all()
    assert torch.isinf(value[0, 2]).all()


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize(
    ("heads", "kv_heads", "rows", "width", "k"), [(4, 2, 37, 300, 4), (2, 1, 9, 40, 5), (3, 3, 5, 3, 4)]
)
def test_the_scan_picks_the_references_keys(ties, heads, kv_heads, rows, width, k):
    """Grouped-query heads, every prefix length from none to all keys, k above the width; with
    `ties`, integer scores where most keys tie with others."""
    generator = torch.Generator().manual_seed(rows + width)
    if ties:
        queries = torch.randint(-2, 3, (heads, rows, 8), generator=generator).float()
        keys = torch.randint(-2, 3, (kv_heads, width, 8), generator=generator).float()
    else:
        queries, keys = (
            torch.randn(heads, rows, 8, generator=generator),
            torch.randn(kv_heads, width, 8, generator=generator),
        )
    visible = torch.randint(0, width + 1, (rows,), generator=generator)
    visible[0], visible[-1] = 0, width
    same_picks(queries, keys, visible, k)


@pytest.mark.parametrize("ties", [False, True])
def test_tiles_of_keys_and_runs_of_queries_keep_the_same_picks(monkeypatch, ties):
    """Keys in tiles of 70 (not a multiple of the scan's runs of 32), queries in runs of 3 (the score
    budget of one tile allows 3 rows of 4 heads): each query's best k carry over from tile to tile."""
    monkeypatch.setattr(scan_module, "KEY_TILE", 70)
    monkeypatch.setattr(scan_module, "SCORE_BYTES", 4 * 4 * 70 * 3)
    generator = torch.Generator().manual_seed(int(ties))
    if ties:  # the best scores repeat across tiles: the earliest copies must win
        queries = torch.randint(-1, 2, (4, 11, 6), generator=generator).float()
        keys = torch.randint(-1, 2, (2, 333, 6), generator=generator).float()
    else:
        queries, keys = torch.randn(4, 11, 6, generator=generator), torch.randn(2, 333, 6, generator=generator)
    visible = torch.tensor([0, 1, 31, 32, 33, 69, 70, 71, 200, 332, 333])
    same_picks(queries, keys, visible, 4)


def test_masked_keys_never_outrank_seen_ones():
    """-inf scores (what a caller's mask would give) are never picked over a finite one."""
    queries = torch.ones(1, 1, 1)
    keys = torch.tensor([[[float("-inf")], [2.0], [float("-inf")], [1.0]]])
    value, index = scan_top_keys(queries, keys, torch.tensor([4]), 3)
    assert value[0, 0, :2].tolist() == [2.0, 1.0] and index[0, 0, :2].tolist() == [1, 3]
    assert value[0, 0, 2] == float("-inf")


def test_without_a_compiler_the_path_falls_back_with_the_reason(monkeypatch, tmp_path):
    """A build that fails (here: a compiler that does not exist) leaves `auto` on the PyTorch path and
    makes `backend='scan'` one message with the reason; nothing is left in the cache."""
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("LM_EVAL_LONGMEM_CACHE", str(tmp_path / "cache"))
    scan_module.LIBRARY.forget()
    try:
        on_cpu = torch.zeros(1)
        assert not scan_module.available()
        assert top_keys_path("auto", on_cpu) == "torch"
        with pytest.raises(RuntimeError, match="backend='scan' is not available: .*no-such-cc"):
            top_keys_path("scan", on_cpu)
        with pytest.raises(RuntimeError, match="the CPU top-keys scan is not available"):
            scan_top_keys(torch.ones(1, 1, 1), torch.ones(1, 1, 1), torch.tensor([1]), 1)
        assert not list((tmp_path / "cache").rglob("*.so"))
    finally:
        scan_module.LIBRARY.forget()


def test_a_compiler_error_is_reported_not_raised(monkeypatch, tmp_path):
    """A compiler that runs and fails: its message is the reason."""
    failing = tmp_path / "cc"
    failing.write_text("#!/bin/sh\necho 'cc: fatal error: out of disk' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setenv("CC", str(failing))
    monkeypatch.setenv("LM_EVAL_LONGMEM_CACHE", str(tmp_path / "cache"))
    scan_module.LIBRARY.forget()
    try:
        assert "out of disk" in scan_module.unavailable_reason()
        assert not list((tmp_path / "cache").rglob("*.so*"))  # no library, no partial file
    finally:
        scan_module.LIBRARY.forget()
