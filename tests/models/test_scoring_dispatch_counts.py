"""What a bounded cache's scoring call costs in launches, counted: on a GPU every aten op that computes
is a kernel launch and every host read drains the queue, so a scorer whose op count grows with the
number of chunks is bound by the host however little arithmetic it does. StreamingLLM and LongCache
score layer by layer: a fixed number of ops per layer, the same at 12 and at 24 chunks, and no host
read but the span totals' two (log-likelihood, greedy hits). The chunk runner they replace for
scoring dispatched ~40 ops per layer and chunk, and LongCache read back one `nonzero` per layer and
recalling chunk. Counted on the CPU (runtime/dispatch_count.py), where the same ops are dispatched."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig

from lm_eval_longmem.models.method_registry import build_method
from lm_eval_longmem.models.runtime.dispatch_count import DispatchCount
from lm_eval_longmem.models.runtime.scoring import ScoredSpan, TeacherForcedScorer
from tests.helpers.tiny_models import tiny_of, token_ids

BUDGET = {"max_context_length": 24, "chunk_size": 8, "sink_length": 4}
EXTRA = {"streamingllm": {}, "longcache": {"top_k_prime": 3, "span_size": 2}}
LENGTHS = (96, 192)  # 12 and 24 chunks of 8, 9 and 21 of them past the budget
# Most ops a layer may add to a call, and most a call may dispatch besides its layers (embedding, RoPE
# tables, masks, final norm, head and totals). Measured with torch 2.13: streamingllm 73 per layer +
# 51, longcache 136 + 48 (its recall), vanilla 34 + 36. The bounds leave room for another torch
# version's decompositions; the chunk runner's ~40 per layer and chunk is far past them.
MOST_OPS = {"streamingllm": (100, 70), "longcache": (170, 70)}
TOTALS_READS = 2


def tiny_llama(layers: int):
    return tiny_of(LlamaConfig, num_hidden_layers=layers)


@pytest.fixture(scope="module")
def models():
    return {layers: tiny_llama(layers) for layers in (2, 4)}


def counted_call(scorer, length: int) -> DispatchCount:
    row = token_ids(length, seed=length)
    span = ScoredSpan(length - 9, tuple(row[length - 8 :]))
    ids = torch.tensor([row])
    scorer.score(ids, [span])  # once before counting: lazily built tables are not the steady state
    with DispatchCount() as count:
        scorer.score(ids, [span])
    return count


def scorer_of(name: str, model):
    method = build_method(name, {**BUDGET, **EXTRA[name]})
    method.prepare_model(model)
    return method.make_scorer(model)


@pytest.mark.parametrize("name", ["streamingllm", "longcache"])
def test_ops_per_scoring_call_do_not_grow_with_the_number_of_chunks(models, name):
    counts = {length: counted_call(scorer_of(name, models[2]), length) for length in LENGTHS}
    short, long = (counts[length] for length in LENGTHS)
    assert long.ops == short.ops, f"{short.ops} ops at 12 chunks, {long.ops} at 24: {long.by_op - short.by_op}"
    assert short.host_reads == long.host_reads == TOTALS_READS, long.reads_by_op


@pytest.mark.parametrize("name", ["streamingllm", "longcache"])
def test_ops_grow_by_a_fixed_number_per_layer(models, name):
    two, four = (counted_call(scorer_of(name, models[layers]), LENGTHS[1]).ops for layers in (2, 4))
    per_layer = (four - two) // 2
    most_per_layer, most_besides = MOST_OPS[name]
    assert four - two == 2 * per_layer and per_layer <= most_per_layer
    assert two - 2 * per_layer <= most_besides


def test_vanilla_is_the_yardstick(models):
    """The same count for vanilla's one forward: what the bounds above compare with."""
    counts = [counted_call(TeacherForcedScorer(models[2]), length) for length in LENGTHS]
    assert counts[0].ops == counts[1].ops and counts[0].ops <= 2 * 34 + 60
