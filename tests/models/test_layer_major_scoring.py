"""StreamingLLM and LongCache scored layer by layer give the chunk runner's results.

The chunk runner (`make_chunk_runner_scorer`) stays the reference: on a random tiny model of every family
of the method matrix, fp32, each token's negative log-likelihood from `LayerMajorSequence` (what the
methods' `make_scorer` scores through) equals the runner's to TOLERANCE, on inputs shorter than the
sinks and than the budget, exactly one chunk, a partial last chunk, and a budget and chunk that
divide neither each other nor the input.

TOLERANCE: the same sums in another order. Keys are rotated at their original positions instead
of re-indexed ones (the same q.k up to the rounding of cos/sin at larger angles), the two attention
parts are merged through their log-sum-exp instead of one softmax, and projections run over the
row instead of a chunk. Each moves a logit by ~1e-7 relative; measured differences stay under 2e-6.

LongCache's recall is a discrete choice (each query head's top_k keys by q.k): where two candidate
scores are equal up to rounding, another summation order may pick the other one, and both are the
method (`torch.topk` leaves even exact ties unspecified). At the first layer a repeated token's
pre-RoPE keys are identical, so these rows hold no repeated token (the tiny vocabulary allows 82).
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from lm_eval_longmem.models.bounded_cache.layer_major_sequence import LayerMajorSequence
from lm_eval_longmem.models.method_registry import build_method
from lm_eval_longmem.models.runtime.scoring import ScoredSpan
from tests.helpers.tiny_families import FAMILIES, build_family_model

TOLERANCE = 2e-5  # per-token NLL, nats
# (max_context_length, chunk_size, sink_length, T)
CASES = {
    "shorter than the sinks": (24, 8, 4, 3),
    "exactly one chunk": (24, 8, 4, 8),
    "shorter than the budget": (24, 8, 4, 20),
    "partial last chunk": (24, 8, 4, 61),
    "nothing divides": (25, 7, 3, 82),
}
EXTRA = {"streamingllm": {}, "longcache": {"top_k_prime": 3, "span_size": 2}}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def family_models(tiny_model_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("layer_major_families")
    models = {}
    for family in FAMILIES:
        directory = build_family_model(family, root / family, tiny_model_dir)
        # Gemma 2 eager: its attention soft-cap is applied (under SDPA transformers drops it)
        implementation = "eager" if family == "gemma2" else None
        models[family] = AutoModelForCausalLM.from_pretrained(directory, attn_implementation=implementation).eval()
    return models


def distinct_row(length: int, vocab: int, seed: int) -> list[int]:
    """`length` different token ids (no special token), in a random order."""
    order = torch.randperm(vocab - 4, generator=torch.Generator().manual_seed(seed)) + 4
    return order[:length].tolist()


def nll_both_ways(model, name: str, budget: int, chunk: int, sinks: int, length: int, reference: bool = True):
    """(layer by layer, chunk runner) scores of one distinct row; without `reference`, (layer by layer, None)."""
    method = build_method(
        name, {"max_context_length": budget, "chunk_size": chunk, "sink_length": sinks, **EXTRA[name]}
    )
    method.prepare_model(model)
    row = distinct_row(length, model.config.vocab_size - 1, seed=length)
    span = ScoredSpan(0, tuple(row[1:]) + (5,))
    ids = torch.tensor([row])
    scorer = method.make_scorer(model)
    assert isinstance(scorer.start_sequence(), LayerMajorSequence)
    (ours,) = scorer.score(ids, [span])
    if not reference:
        return ours, None
    (runner,) = method.make_chunk_runner_scorer(model).score(ids, [span])
    return ours, runner


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("name", ["streamingllm", "longcache"])
def test_layer_major_scores_are_the_chunk_runners(family_models, family, name):
    for case, (budget, chunk, sinks, length) in CASES.items():
        ours, reference = nll_both_ways(family_models[family], name, budget, chunk, sinks, length)
        gap = float(abs(torch.from_numpy(ours.token_nll) - torch.from_numpy(reference.token_nll)).max())
        assert gap <= TOLERANCE, f"{family}, {case}: per-token NLL differs by {gap:.2e}"
        assert ours.num_correct == reference.num_correct, case


EDGE_ARGUMENTS = [
    ("streamingllm", {"sink_length": 0}),
    ("longcache", {"sink_length": 0, "top_k_prime": 3, "span_size": 2}),
    ("longcache", {"top_k": 0, "top_k_prime": 3, "span_size": 2}),  # no key picked: nothing recalled
    ("longcache", {"top_k_prime": 0, "span_size": 2}),  # no span: sinks and the local window only
    ("longcache", {"top_k": 50, "top_k_prime": 3, "span_size": 3}),  # more picks than middle keys
    ("longcache", {"top_k": 1, "top_k_prime": 2, "span_size": 5}),  # odd spans clamped at the edges
]


@pytest.mark.parametrize(("name", "arguments"), EDGE_ARGUMENTS)
def test_edge_arguments_match_the_chunk_runner(family_models, name, arguments):
    model = family_models["llama"]
    method = build_method(name, {"max_context_length": 24, "chunk_size": 8, "sink_length": 4, **arguments})
    method.prepare_model(model)
    row = distinct_row(70, model.config.vocab_size - 1, seed=70)
    span = ScoredSpan(0, tuple(row[1:]) + (5,))
    (ours,) = method.make_scorer(model).score(torch.tensor([row]), [span])
    (reference,) = method.make_chunk_runner_scorer(model).score(torch.tensor([row]), [span])
    assert float(abs(torch.from_numpy(ours.token_nll) - torch.from_numpy(reference.token_nll)).max()) <= TOLERANCE


@pytest.mark.parametrize(("chunks", "key_tile"), [(0, 2048), (0, 5), (1, 2048), (1, 7), (2, 2048), (3, 2048)])
def test_recall_scored_in_groups_of_chunks_recalls_the_same(family_models, monkeypatch, chunks, key_tile):
    """Under a smaller score budget the recalling chunks are scored in groups (of one chunk at
    budget 0, its keys in tiles of `key_tile` and its queries one by one; of about 1-4 chunks, whose
    middles differ, at the others): the same slots as the CPU's default path, the C scan
    (`kernels/top_keys/scan_top_keys.py`)."""
    from lm_eval_longmem.kernels.top_keys.scan_top_keys import SWITCH_ENV
    from lm_eval_longmem.models.bounded_cache import tiled_top_k

    model = family_models["qwen3"]
    budget, chunk, sinks, length = 24, 8, 4, 82
    whole = nll_both_ways(model, "longcache", budget, chunk, sinks, length)[0].token_nll
    heads = model.config.num_attention_heads
    monkeypatch.setenv(SWITCH_ENV, "0")  # the groups
    monkeypatch.setattr(tiled_top_k, "CPU_SCORE_BYTES", chunks * 4 * heads * chunk * length)  # the widest < length
    monkeypatch.setattr(tiled_top_k, "KEY_TILE", key_tile)
    grouped = nll_both_ways(model, "longcache", budget, chunk, sinks, length)[0].token_nll
    assert (whole == grouped).all()


def test_recall_through_the_kernel_recalls_the_same(family_models, monkeypatch):
    """The recall's picks from the Triton kernel (`kernels/top_keys`, one launch for every recalling
    chunk of a layer; here in the interpreter, as on a GPU it runs by default) score as the
    groups' picks do, on a budget and chunk that divide nothing (each recalling chunk's middle differs)."""
    from lm_eval_longmem.kernels.top_keys.scan_top_keys import SWITCH_ENV
    from lm_eval_longmem.models.bounded_cache import chunk_recall
    from tests.helpers.triton_interpreter import interpreted

    if not interpreted():
        pytest.skip("triton was imported before TRITON_INTERPRET=1")
    model, case = family_models["qwen3"], CASES["nothing divides"]
    with monkeypatch.context() as groups_only:
        groups_only.setenv(SWITCH_ENV, "0")
        groups = nll_both_ways(model, "longcache", *case, reference=False)[0]
    monkeypatch.setattr(chunk_recall, "top_keys_path", lambda backend, like: "triton")
    kernel = nll_both_ways(model, "longcache", *case, reference=False)[0]
    assert (kernel.token_nll == groups.token_nll).all() and kernel.num_correct == groups.num_correct
