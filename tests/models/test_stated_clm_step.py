"""Stated-CLM's static-shape steady-state step against the chunk runner (the reference), on a tiny
random model of every family the method matrix runs stated-CLM on.

Tolerance: the step runs the runner's own ops in the runner's order (the same `attend`, the same
rotation per position, the same merge functions), except that the merge and the pair scores run
over all layers stacked instead of one layer at a time; fp32 rounding is all that may differ, so
log-likelihoods agree to 1e-5 nats and keys/values to 1e-6, while the merged counts, which depend
only on which pairs were chosen, must be identical (measured: identical bits throughout)."""

import pytest
import torch

from lm_eval_longmem.models.method_registry import build_method
from lm_eval_longmem.models.runtime.scoring import ScoredSpan
from tests.helpers.streaming import count_steady_steps, recorded
from tests.helpers.tiny_families import FAMILIES, family_model
from tests.helpers.tiny_models import token_ids

# a budget that neither the chunk nor the inputs divide: the chunk that fills the cache shrinks by 3
ARGS = {"max_context_length": 21, "chunk_size": 6, "sink_length": 3}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def models():
    return {}


def scored_both_ways(model, length: int, args: dict = ARGS):
    method = build_method("statedclm", args)
    method.prepare_model(model)
    row = token_ids(length + 1, seed=length)
    span = ScoredSpan(1, tuple(row[2:]))  # the scorer feeds `length` tokens, the last one only a target
    reference = method.make_chunk_runner_scorer(model)
    stepped = method.make_scorer(model)
    reference_runners, stepped_runners = recorded(reference), recorded(stepped, count_steady_steps)
    expected = reference.score(torch.tensor([row]), [span])[0]
    got = stepped.score(torch.tensor([row]), [span])[0]
    (reference_runner,), (stepped_runner,) = reference_runners, stepped_runners
    return expected, got, reference_runner.caches, stepped_runner.caches, stepped_runner.steady_step.calls


def assert_same(expected, got, reference_caches, stepped_caches):
    assert got[0] == pytest.approx(expected[0], abs=1e-5)  # the log-likelihood
    assert (got.num_correct, got.num_tokens) == (expected.num_correct, expected.num_tokens)
    for want, have in zip(reference_caches, stepped_caches, strict=True):
        assert torch.equal(have.counts, want.counts)  # the same pairs merged
        torch.testing.assert_close(have.keys, want.keys, atol=1e-6, rtol=0)
        torch.testing.assert_close(have.values, want.values, atol=1e-6, rtol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_step_scores_as_the_chunk_runner_on_every_family(models, family):
    model = models.setdefault(family, family_model(family, 64))
    # 50 tokens: three fill chunks, the one that crosses the budget, four steady chunks, a partial last chunk
    expected, got, reference_caches, stepped_caches, steady = scored_both_ways(model, 50)
    assert steady == 4
    assert_same(expected, got, reference_caches, stepped_caches)
    assert max(c.counts.max().item() for c in stepped_caches) > 1  # entries were merged


@pytest.mark.parametrize(
    ("length", "steady"),
    [
        (5, 0),  # shorter than a chunk
        (6, 0),  # exactly one chunk
        (20, 0),  # shorter than the budget
        (27, 0),  # the chunk that crosses the budget, then the last chunk
        (31, 1),  # one steady chunk, then a partial last one
        (36, 1),  # one steady chunk, then a full last one (which shrinks nothing)
    ],
)
def test_step_scores_as_the_chunk_runner_at_every_length(models, length, steady):
    model = models.setdefault("llama", family_model("llama", 64))
    expected, got, reference_caches, stepped_caches, ran = scored_both_ways(model, length)
    assert ran == steady
    assert_same(expected, got, reference_caches, stepped_caches)


def test_step_keeps_the_budget_and_the_tokens_counted(models):
    model = models.setdefault("llama", family_model("llama", 64))
    *_, stepped_caches, _ = scored_both_ways(model, 42)  # ends on a steady chunk's cache plus a last chunk
    for cache in stepped_caches:
        assert len(cache) == ARGS["max_context_length"] + ARGS["chunk_size"]  # the last chunk shrinks nothing
        assert cache.counts.sum().item() == 42  # every token stands in some entry
