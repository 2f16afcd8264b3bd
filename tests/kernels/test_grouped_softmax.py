"""The grouped softmax: the reference against the paper's closed form on a hand case, and the
PyTorch path against the reference, forward and gradient."""

from __future__ import annotations

import importlib
import math

import pytest
import torch

from lm_eval_longmem.kernels.grouped_softmax import (
    block_bias_grouped_softmax,
    grouped_softmax,
    reference_grouped_softmax,
    retrieval_attention,
)
from tests.helpers.retrieval_attention_cases import random_case, written_out


def test_closed_form_on_a_hand_case():
    """B = 3 (two tokens + landmark); the query at position 7 sits in block 2 (keys 6, 7)."""
    s = torch.tensor([[0.5, -1.0, 2.0, 0.3, 0.7, -0.4, 1.1, 0.2]], dtype=torch.float64)
    w = reference_grouped_softmax(s, 3)[0]
    e = [math.exp(x) for x in s[0].tolist()]
    z = e[6] + e[7] + e[2] + e[5]  # own block + the two earlier landmarks
    expected = [
        e[2] / z * e[0] / (e[0] + e[1]),
        e[2] / z * e[1] / (e[0] + e[1]),
        0.0,
        e[5] / z * e[3] / (e[3] + e[4]),
        e[5] / z * e[4] / (e[3] + e[4]),
        0.0,
        e[6] / z,
        e[7] / z,
    ]
    assert w.tolist() == pytest.approx(expected, rel=1e-12)


def test_a_landmark_query_does_not_see_itself():
    s = torch.randn(6, 6, dtype=torch.float64)
    w = reference_grouped_softmax(s, 3)
    assert w[2, 2] == 0 and w[2, :2].sum().item() == pytest.approx(1.0)
    assert w[5, 3:5].sum().item() + w[5, :2].sum().item() == pytest.approx(1.0)


@pytest.mark.parametrize("block_size, num_queries, num_keys", [(4, 13, 13), (3, 5, 17), (5, 1, 23), (2, 9, 9)])
def test_rows_sum_to_one_and_landmarks_weigh_nothing(block_size, num_queries, num_keys):
    s = torch.randn(2, 3, num_queries, num_keys, dtype=torch.float64) * 3
    w = reference_grouped_softmax(s, block_size)
    assert torch.allclose(w.sum(-1), torch.ones_like(w.sum(-1)))
    assert (w[..., block_size - 1 :: block_size] == 0).all()
    causal = torch.ones(num_queries, num_keys, dtype=torch.bool).tril(num_keys - num_queries)
    assert (w[..., ~causal] == 0).all()


@pytest.mark.parametrize("block_size, num_queries, num_keys", [(4, 13, 13), (3, 5, 17), (5, 1, 23), (64, 70, 200)])
def test_pytorch_path_matches_the_reference_forward_and_gradient(block_size, num_queries, num_keys):
    torch.manual_seed(0)
    s = (torch.randn(2, num_queries, num_keys, dtype=torch.float64) * 2).requires_grad_()
    probe = torch.randn(2, num_queries, num_keys, dtype=torch.float64)
    want = reference_grouped_softmax(s, block_size)
    got = block_bias_grouped_softmax(s, block_size)
    assert torch.allclose(got, want, atol=1e-12)
    (want_grad,) = torch.autograd.grad((want * probe).sum(), s)
    (got_grad,) = torch.autograd.grad((got * probe).sum(), s)
    assert torch.allclose(got_grad, want_grad, atol=1e-10)
    assert (got[..., block_size - 1 :: block_size] == 0).all()


def test_pytorch_path_stays_finite_at_large_scores():
    s = torch.randn(4, 40, 40) * 80
    w = grouped_softmax(s, 8)
    assert torch.isfinite(w).all() and torch.allclose(w.sum(-1), torch.ones(4, 40), atol=1e-5)


@pytest.mark.parametrize("block_size", [1, 0])
def test_a_block_needs_a_token_beside_its_landmark(block_size):
    with pytest.raises(ValueError, match="block_size must be at least 2"):
        grouped_softmax(torch.zeros(3, 3), block_size)


@pytest.mark.parametrize("softcap", [None, 2.0])
@pytest.mark.parametrize("block, window", [(4, 8), (3, 9)])
def test_retrieval_attention_equals_the_grouped_softmax_written_out(softcap, block, window):
    """Chosen blocks read by index, invalid slots read nothing, the window causal, GQA: fp32 against
    float64 query by query (summation order only)."""
    case = random_case(block=block, window=window)
    got = retrieval_attention(**case, softcap=softcap, backend="torch")
    assert torch.allclose(got.double(), written_out(case, softcap), atol=1e-5)


@pytest.mark.parametrize("blocks_per_piece", [None, 1, 2])
def test_retrieval_attention_goes_through_pieces_unchanged(monkeypatch, blocks_per_piece):
    """Pieces of one window each (None), or of runs of one or two blocks of a window's queries."""
    module = importlib.import_module("lm_eval_longmem.kernels.grouped_softmax.retrieval_attention")
    case = random_case(windows=5, block=4, window=12)
    whole = retrieval_attention(**case, backend="torch")
    heads, _, k, dim = case["slot_queries"].shape
    per_query = 2 * heads * k * 4 * dim * case["store_keys"].element_size()
    budget = per_query * (12 if blocks_per_piece is None else 4 * blocks_per_piece)
    for name in ("GATHER_BUDGET_BYTES", "CPU_GATHER_BUDGET_BYTES"):
        monkeypatch.setattr(module, name, budget)
    pieces = list(module._pieces(60, 12, 4, budget // per_query))
    assert len(pieces) == (5 if blocks_per_piece is None else 5 * -(-3 // blocks_per_piece))
    assert torch.allclose(retrieval_attention(**case, backend="torch"), whole, atol=1e-6)
