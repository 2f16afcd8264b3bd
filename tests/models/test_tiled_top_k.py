"""Each query's best keys scored in tiles are the keys the whole score matrix ranks first.

The tiles change where scores are held, not which keys win: each tile's own top k, merged, is the
row's top k. Random float32 scores hold no exact ties, so the picks compare exactly; the scores
compare to rounding, as a tile's matmul may sum in another order than the whole one's."""

from __future__ import annotations

import pytest
import torch

from lm_eval_longmem.models.bounded_cache import tiled_top_k
from lm_eval_longmem.models.bounded_cache.tiled_top_k import top_keys
from tests.helpers.devices import DEVICES


def whole_matrix_top_keys(queries, keys, k):
    return (queries @ keys.transpose(1, 2)).topk(min(k, keys.shape[1]), dim=-1)


@pytest.mark.parametrize(
    ("budget_bytes", "key_tile", "width", "k"),
    [
        (2**30, 2048, 37, 4),  # one tile: the whole matrix
        (0, 2048, 37, 4),  # a query at a time, all keys in one tile
        (0, 8, 37, 4),  # a query at a time, keys in tiles of 8 (the last of 5 keys)
        (0, 8, 35, 4),  # ... the last tile narrower than k (3 keys)
        (3 * 4 * 6 * 10, 10, 53, 3),  # runs of 6 queries over tiles of 10 keys
        (0, 4, 3, 5),  # more picks asked than keys
    ],
)
@pytest.mark.parametrize("device", DEVICES)
def test_tiled_picks_are_the_whole_matrix_picks(monkeypatch, budget_bytes, key_tile, width, k, device):
    monkeypatch.setattr(tiled_top_k, "CPU_SCORE_BYTES", budget_bytes)
    monkeypatch.setattr(tiled_top_k, "GPU_SCORE_BYTES", budget_bytes)
    monkeypatch.setattr(tiled_top_k, "KEY_TILE", key_tile)
    generator = torch.Generator().manual_seed(width)
    queries = torch.randn(3, 13, 8, generator=generator).to(device)
    keys = torch.randn(3, width, 8, generator=generator).to(device)
    value, index = top_keys(queries, keys, k)
    expected_value, expected_index = whole_matrix_top_keys(queries, keys, k)
    assert value.shape == expected_value.shape == (3, 13, min(k, width))
    assert torch.equal(index, expected_index)
    torch.testing.assert_close(value, expected_value, rtol=1e-6, atol=1e-6)


def earliest_of_equal_scores(queries, keys, k):
    """The reference for ties: a stable sort of the whole matrix, best first."""
    scores = queries @ keys.transpose(1, 2)
    value, index = scores.sort(dim=-1, descending=True, stable=True)
    return value[..., :k], index[..., :k]


@pytest.mark.parametrize(
    ("budget_bytes", "key_tile", "width"),
    [(2**30, 2048, 40), (2**30, 2048, 300), (0, 2048, 300), (0, 8, 45), (0, 300, 700), (3 * 4 * 6 * 10, 10, 53)],
)
def test_equal_scores_pick_the_earlier_keys_whatever_the_tiling(monkeypatch, budget_bytes, key_tile, width):
    """Integer queries and keys with 5 distinct keys repeated: every score is exact and most are tied,
    as a repeated token's first-layer keys are. The picks are the earliest keys of each score (in
    whatever order among equal scores: the recall counts picks, it does not rank them)."""
    monkeypatch.setattr(tiled_top_k, "CPU_SCORE_BYTES", budget_bytes)
    monkeypatch.setattr(tiled_top_k, "KEY_TILE", key_tile)
    generator = torch.Generator().manual_seed(width)
    queries = torch.randint(-2, 3, (3, 13, 8), generator=generator).float()
    distinct = torch.randint(-2, 3, (3, 5, 8), generator=generator).float()
    keys = distinct[:, torch.randint(0, 5, (width,), generator=generator)]
    value, index = top_keys(queries, keys, 4)
    expected_value, expected_index = earliest_of_equal_scores(queries, keys, 4)
    assert torch.equal(value, expected_value)  # best first
    assert torch.equal(index.sort(dim=-1).values, expected_index.sort(dim=-1).values)
