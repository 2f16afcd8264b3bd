"""Stated-CLM's steady-state step under `torch.compile(fullgraph=True)`: dynamo traces the forward,
the input gradients and the merge as one graph with no break, and the compiled step gives the eager
step's results. The fast tests trace with the `aot_eager` backend (dynamo's tracing and autograd's
graph, no code generation); the slow one compiles with inductor, the default, as `compile_step=True`
does. Tolerance: a compiled graph may fuse and reorder fp32 arithmetic, so hidden states, keys and
values agree to 1e-4 (measured under 5e-6) while the merged counts must be identical."""

import pytest
import torch
import torch._dynamo

from lm_eval_longmem.models.bounded_cache.runner import BoundedCacheRunner
from lm_eval_longmem.models.bounded_cache.stated_clm_step import StackedCache, StatedCLMStep, traced
from lm_eval_longmem.models.method_registry import build_method
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.scoring import ScoredSpan
from tests.helpers.streaming import count_steady_steps, recorded
from tests.helpers.tiny_families import family_model
from tests.helpers.tiny_models import token_ids

ARGS = {"max_context_length": 21, "chunk_size": 6, "sink_length": 3}
CLOSE = {"atol": 1e-4, "rtol": 0}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def setting():
    """A tiny Llama, its stated-CLM method, a full cache and the next chunk's ids (7: the last one a target)."""
    model = family_model("llama", 64)
    method = build_method("statedclm", ARGS)
    method.prepare_model(model)
    runner = BoundedCacheRunner(Decoder(model), method.make_policy())
    row = token_ids(40, seed=1)
    with torch.no_grad():
        for start in range(0, 24, 6):
            runner.feed_chunk(row[start : start + 6], next_id=row[start + 6])
    assert len(runner) == ARGS["max_context_length"]
    return model, method, StackedCache.of(runner.caches), torch.tensor(row[24:31])


def step_of(model, method, compiled: bool, backend: str = "inductor") -> StatedCLMStep:
    a = method.args
    return StatedCLMStep(Decoder(model), a.max_context_length, a.chunk_size, a.sink_length, a.sigma, compiled, backend)


def test_the_step_traces_as_one_graph_without_a_break(setting):
    model, method, cache, window = setting
    step = step_of(model, method, compiled=False)
    torch._dynamo.reset()
    explained = traced(torch._dynamo.explain(step._step))(cache.keys, cache.values, cache.counts, window)
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1


def test_the_compiled_step_gives_the_eager_step_results(setting):
    model, method, cache, window = setting
    torch._dynamo.reset()
    with torch.no_grad():  # as the scorer calls it
        hidden, after = step_of(model, method, compiled=False)(cache, window)
        compiled_hidden, compiled_after = step_of(model, method, compiled=True, backend="aot_eager")(cache, window)
    assert torch.equal(compiled_after.counts, after.counts)
    assert after.counts.max() > 1  # pairs were merged
    torch.testing.assert_close(compiled_hidden, hidden, **CLOSE)
    torch.testing.assert_close(compiled_after.keys, after.keys, **CLOSE)
    torch.testing.assert_close(compiled_after.values, after.values, **CLOSE)


@pytest.mark.slow
def test_compile_step_scores_as_eager_with_inductor():
    """`compile_step=True` through the scorer: four steady chunks compiled by inductor (about two minutes
    on two shared cores, most of it compiling)."""
    torch._dynamo.reset()
    model = family_model("llama", 64)
    method = build_method("statedclm", {**ARGS, "compile_step": True})
    method.prepare_model(model)
    row = token_ids(51, seed=3)
    span = ScoredSpan(1, tuple(row[2:]))
    compiled = method.make_scorer(model)
    eager = build_method("statedclm", ARGS).make_scorer(model)
    eager_runners, compiled_runners = recorded(eager), recorded(compiled, count_steady_steps)
    expected = eager.score(torch.tensor([row]), [span])[0]
    got = compiled.score(torch.tensor([row]), [span])[0]
    (eager_runner,), (compiled_runner,) = eager_runners, compiled_runners
    assert compiled_runner.steady_step.fn.compiled and compiled_runner.steady_step.calls == 4
    assert got[0] == pytest.approx(expected[0], abs=1e-4)
    for want, have in zip(eager_runner.caches, compiled_runner.caches, strict=True):
        assert torch.equal(have.counts, want.counts)
        torch.testing.assert_close(have.keys, want.keys, **CLOSE)
