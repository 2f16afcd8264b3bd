"""The top-keys kernel (LongCache's recall) against its reference on CPU, through the Triton
interpreter: the same keys, the earlier of equal scores included, each query seeing only its prefix."""

from __future__ import annotations

import pytest
import torch

from lm_eval_longmem.kernels.top_keys import reference_top_keys
from tests.helpers.triton_interpreter import interpreted, run_interpreted_in_a_fresh_process

INTERPRETED = interpreted()
needs_interpreter = pytest.mark.skipif(not INTERPRETED, reason="triton was imported before TRITON_INTERPRET=1")


def kernel(*args):
    """Tiles of 16 x 16 (the smallest `tl.dot` takes): several runs of queries and several key tiles
    on small inputs, which the interpreter runs in seconds."""
    from lm_eval_longmem.kernels.top_keys.triton_top_keys import triton_top_keys

    return triton_top_keys(*args, block_q=16, block_k=16)


@needs_interpreter
@pytest.mark.parametrize(
    ("heads", "kv_heads", "rows", "width", "dim", "k"),
    [
        (2, 1, 21, 40, 16, 4),  # two runs of queries (the second partial), three key tiles (the last partial)
        (2, 2, 9, 20, 24, 3),  # a head dim and a k that are not powers of two, one short run
        (3, 1, 12, 32, 8, 1),  # multi-query keys, one pick
        (2, 1, 5, 3, 8, 5),  # more picks than keys: the slots left over are empty
    ],
)
def test_random_scores_pick_the_references_keys(heads, kv_heads, rows, width, dim, k):
    generator = torch.Generator().manual_seed(rows * width)
    queries = torch.randn(heads, rows, dim, generator=generator)
    keys = torch.randn(kv_heads, width, dim, generator=generator)
    visible = torch.randint(0, width + 1, (rows,), generator=generator)
    visible[0], visible[-1] = 0, width  # a query that sees nothing, one that sees every key
    value, index = kernel(queries, keys, visible, k)
    want_value, want_index = reference_top_keys(queries, keys, visible, k)
    picked = torch.isfinite(want_value)
    assert torch.equal(torch.isfinite(value), picked)
    assert torch.equal(index[picked], want_index[picked])
    torch.testing.assert_close(value[picked], want_value[picked], rtol=1e-5, atol=1e-5)  # other summation orders
    assert picked.sum(-1).tolist() == torch.minimum(visible, torch.tensor(k)).expand(heads, rows).tolist()


@needs_interpreter
@pytest.mark.parametrize("k", [1, 3, 4])
def test_equal_scores_pick_the_earlier_keys(k):
    """Integer queries and 5 distinct keys repeated (a repeated token's first-layer keys): exact
    scores, most of them tied, across several key tiles."""
    generator = torch.Generator().manual_seed(k)
    queries = torch.randint(-2, 3, (2, 20, 8), generator=generator).float()
    distinct = torch.randint(-2, 3, (2, 5, 8), generator=generator).float()
    keys = distinct[:, torch.randint(0, 5, (60,), generator=generator)]
    visible = torch.randint(30, 61, (20,), generator=generator)
    value, index = kernel(queries, keys, visible, k)
    want_value, want_index = reference_top_keys(queries, keys, visible, k)
    assert torch.equal(value, want_value) and torch.equal(index, want_index)


@pytest.mark.skipif(INTERPRETED or torch.cuda.is_available(), reason="the tests above ran in this process")
def test_in_a_fresh_interpreted_process():
    run_interpreted_in_a_fresh_process(__file__)
