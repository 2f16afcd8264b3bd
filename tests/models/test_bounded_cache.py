"""The shared bounded-cache machinery on tiny real models: equality with vanilla when nothing is
evicted (scoring and generation, Llama/Mistral/Qwen3), the budget, re-indexed positions, the
stated-CLM gradients, LongCache's recall."""

import copy

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from lm_eval_longmem.models.bounded_cache.layer_cache import LayerCache
from lm_eval_longmem.models.bounded_cache.recall import recall_middle
from lm_eval_longmem.models.bounded_cache.runner import BoundedCacheRunner
from lm_eval_longmem.models.method_framework.bounded_cache_family import BoundedCacheMethod
from lm_eval_longmem.models.method_registry import MethodArgumentError, available_methods, build_method
from lm_eval_longmem.models.runtime.generation import GenerationRequest
from lm_eval_longmem.models.runtime.llama_decoder import Decoder, UnsupportedArchitectureError
from lm_eval_longmem.models.runtime.scoring import ScoredSpan, TeacherForcedScorer
from tests.helpers.tiny_models import tiny_of_family, token_ids

# The bounded-cache family, read from the methods so that a new member is checked without editing this file.
METHODS = tuple(name for name, cls in available_methods().items() if issubclass(cls, BoundedCacheMethod))
SMALL = {"max_context_length": 24, "chunk_size": 8, "sink_length": 4}


def small_args(name, **extra):
    return {**SMALL, **({"top_k_prime": 3, "span_size": 2} if name == "longcache" else {}), **extra}


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()


def on_device(model, device):
    """The module-scoped model itself on the CPU, a copy elsewhere (`.to` would move the shared one)."""
    return model if device == "cpu" else copy.deepcopy(model).to(device)


def runner_for(model, name, **args):
    method = build_method(name, args)
    method.prepare_model(model)
    return BoundedCacheRunner(Decoder(model), method.make_policy())


@pytest.mark.parametrize("name", METHODS)
def test_scoring_equals_vanilla_when_nothing_is_evicted(tiny, name, device):
    tiny = on_device(tiny, device)
    method = build_method(name, small_args(name, max_context_length=128, chunk_size=16))
    rows = [token_ids(70, seed=1), token_ids(50, seed=2) + [3] * 20]  # right-padded batch
    spans = [ScoredSpan(30, tuple(rows[0][31:70]) + (5,)), ScoredSpan(10, tuple(rows[1][11:50]) + (7,))]
    batch = torch.tensor(rows, device=device)
    ours = method.make_scorer(tiny).score(batch, spans)
    reference = TeacherForcedScorer(tiny).score(batch, spans)
    for a, b in zip(ours, reference):
        assert a[0] == pytest.approx(b[0], abs=1e-4) and (a.num_correct, a[1]) == (b.num_correct, b[1])


@pytest.mark.parametrize("name", METHODS)
def test_generation_equals_vanilla_greedy_when_nothing_is_evicted(tiny, name, device):
    tiny = on_device(tiny, device)
    method = build_method(name, small_args(name, max_context_length=120, chunk_size=16))
    prompt = token_ids(40, seed=3)
    ours = method.make_generator(tiny, None).generate(GenerationRequest(tuple(prompt), 30))
    reference = tiny.generate(
        torch.tensor([prompt], device=device), max_new_tokens=30, do_sample=False, pad_token_id=3
    )[0, 40:]
    assert ours == reference.tolist()


def test_generation_stops_at_a_stop_token(tiny):
    method = build_method("streamingllm", SMALL)
    prompt = token_ids(20, seed=4)
    free = method.make_generator(tiny, None).generate(GenerationRequest(tuple(prompt), 12))
    stopped = method.make_generator(tiny, None).generate(GenerationRequest(tuple(prompt), 12, frozenset({free[3]})))
    assert stopped == free[: free.index(free[3]) + 1]


@pytest.mark.parametrize("family", ["mistral", "qwen2", "qwen3"])
def test_other_llama_family_models_match_vanilla(family):
    model = tiny_of_family(family)
    ids = token_ids(50, seed=5)
    runner = runner_for(model, "statedclm", max_context_length=100, chunk_size=16, sink_length=4)
    with torch.no_grad():
        ours = runner.decoder.logits(torch.cat([runner.feed_chunk(ids[i : i + 16]) for i in range(0, 50, 16)]))
        reference = model(torch.tensor([ids])).logits[0]
    assert torch.allclose(ours, reference, atol=1e-5)


def test_unsupported_architectures_are_refused():
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=32))
    with pytest.raises(UnsupportedArchitectureError, match="whose attention layout is not described"):
        build_method("statedclm", {}).prepare_model(model)


@pytest.mark.parametrize("name", METHODS)
def test_the_cache_never_exceeds_its_budget(tiny, name, device):
    runner = runner_for(on_device(tiny, device), name, **small_args(name))
    ids = token_ids(120, seed=6)
    with torch.no_grad():
        for i in range(0, 120, 8):
            runner.feed_chunk(ids[i : i + 8], ids[i + 8] if i + 8 < 120 else None)
            if name != "longcache":
                assert len(runner) <= 24
            assert runner.widest_attention <= 24 + 8
        for token in token_ids(40, seed=7):  # decoding piles up at most one chunk past the budget
            runner.feed_token(token)
            if name != "longcache":
                assert len(runner) <= 24 + 8
            assert runner.widest_attention <= 24 + 8
    assert runner.widest_attention == 24 + 8
    if name == "statedclm":
        assert runner.shrinks > 0 and all(float(c.counts.sum()) == runner.tokens_seen for c in runner.caches)
        assert all(torch.equal(c.counts[:4].cpu(), torch.ones(4)) for c in runner.caches)  # sinks never merge
    if name == "longcache":
        assert len(runner) == 160  # keeps everything; attention is bounded instead


def one_layer_llama():
    torch.manual_seed(1)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    return LlamaForCausalLM(config).eval()


def test_streamingllm_positions_are_re_indexed_inside_the_cache():
    """With one layer, cached keys/values depend on their token only: after evictions, the last
    chunk must see exactly what a fresh model sees on [sinks + recent window + chunk], i.e.
    kept entries at positions 0..W-1 and the chunk right after them (not at its original
    positions, which RoPE would tell apart)."""
    model = one_layer_llama()
    runner = runner_for(model, "streamingllm", **SMALL)
    ids = token_ids(64, seed=8)
    with torch.no_grad():
        for i in range(0, 56, 8):
            runner.feed_chunk(ids[i : i + 8])
        assert len(runner) == 24
        last = runner.decoder.logits(runner.feed_chunk(ids[56:64]))
        kept = ids[:4] + ids[36:56]
        reference = model(torch.tensor([kept + ids[56:64]])).logits[0, -8:]
        at_original_positions = model(torch.tensor([ids])).logits[0, -8:]
    assert torch.allclose(last, reference, atol=1e-5)
    assert not torch.allclose(last, at_original_positions, atol=1e-3)


def test_longcache_positions_are_re_assigned_inside_its_window():
    """One layer again: the last chunk sees exactly what a fresh model sees on [sinks +
    recalled tokens + local window + chunk], recalled tokens in their original order."""
    model = one_layer_llama()
    runner = runner_for(model, "longcache", **SMALL, top_k_prime=6, top_k=2, span_size=1)
    windows = []
    choose = runner.policy.window

    def recording_window(layer, cache, queries):
        window = choose(layer, cache, queries)
        # which stored entries were picked: match keys back to the cache
        picked = [int((cache.keys[0] == window.keys[0, i]).all(dim=-1).nonzero()[0]) for i in range(len(window))]
        windows.append(picked)
        return window

    runner.policy.window = recording_window
    ids = torch.randperm(64, generator=torch.Generator().manual_seed(10)).tolist()  # distinct tokens, distinct keys
    with torch.no_grad():
        for i in range(0, 56, 8):
            runner.feed_chunk(ids[i : i + 8])
        last = runner.decoder.logits(runner.feed_chunk(ids[56:64]))
        picked = windows[-1]
        assert len(picked) == 24 and picked[:4] == [0, 1, 2, 3] and picked[-14:] == list(range(42, 56))
        assert picked == sorted(picked) and any(4 <= p < 42 for p in picked)
        reference = model(torch.tensor([[ids[p] for p in picked] + ids[56:64]])).logits[0, -8:]
    assert torch.allclose(last, reference, atol=1e-5)


def test_stated_clm_gradients_are_those_of_the_chunk_loss():
    """The evidence handed to the merge is d(chunk LM loss)/d(cached pre-RoPE keys, values):
    checked against central differences along random directions (float64 model; its RMSNorm
    computes in float32, hence the step size and tolerance)."""
    model = one_layer_llama().double()
    runner = runner_for(model, "statedclm", **SMALL)
    ids = token_ids(40, seed=9)
    with torch.no_grad():
        for i in range(0, 24, 8):
            runner.feed_chunk(ids[i : i + 8])
    seen = {}
    shrink = runner.policy.shrink

    def recording_shrink(cache, remove, evidence):
        seen["evidence"] = evidence
        return shrink(cache, remove, evidence)

    runner.policy.shrink = recording_shrink
    before = runner.caches[0].detached()
    chunk, next_id = ids[24:32], ids[32]

    def loss_with(keys, values):
        probe = BoundedCacheRunner(runner.decoder, runner.policy)
        probe.caches = [LayerCache(keys, values, before.counts)]
        hidden, _, _ = probe._forward(chunk, want_received=False)
        logits = runner.decoder.logits(hidden)
        return float(torch.nn.functional.cross_entropy(logits, torch.tensor(chunk[1:] + [next_id]), reduction="sum"))

    with torch.no_grad():
        runner.feed_chunk(chunk, next_id)
        evidence = seen["evidence"]
        assert evidence.received.shape == (24,) and 0 < float(evidence.received.sum()) < 4 * 8
        generator = torch.Generator().manual_seed(0)
        eps = 1e-3
        for which in ("keys", "values"):
            for _ in range(2):
                direction = torch.randn(before.keys.shape, generator=generator, dtype=torch.float64)
                k, v = before.keys, before.values
                plus = loss_with(k + eps * direction, v) if which == "keys" else loss_with(k, v + eps * direction)
                minus = loss_with(k - eps * direction, v) if which == "keys" else loss_with(k, v - eps * direction)
                grad = evidence.key_grad if which == "keys" else evidence.value_grad
                assert float((grad * direction).sum()) == pytest.approx((plus - minus) / (2 * eps), rel=1e-2)
    assert len(runner) == 24 and float(runner.caches[0].counts.sum()) == 32


def test_longcache_recalls_the_keys_queries_point_at():
    keys = torch.zeros(1, 10, 4)
    keys[0, :, 0] = -1.0  # irrelevant keys score below 0
    keys[0, 7] = torch.tensor([5.0, 0, 0, 0])
    keys[0, 2] = torch.tensor([0, 5.0, 0, 0])
    queries = torch.tensor([[[1.0, 0, 0, 0], [1.0, 0.1, 0, 0]], [[1.0, 0, 0, 0], [1.0, 0, 0, 0]]])  # 2 heads, 1 KV head
    assert recall_middle(queries, keys, top_k=1, top_k_prime=4, span_size=1).tolist() == [7]
    assert recall_middle(queries, keys, top_k=2, top_k_prime=4, span_size=1).tolist() == [2, 7]
    assert recall_middle(queries, keys, top_k=1, top_k_prime=3, span_size=3).tolist() == [6, 7, 8]


def test_longcache_recall_by_hand_per_head_counts_and_spans():
    """Hand-computed: 2 query heads sharing 1 KV head, 2 queries each, top_k 1, keys one-hot
    scaled so every q.k is known. Head 0 picks key 3 (query 0) and key 3 (query 1); head 1
    picks key 12 (query 0) and key 8 (query 1): counts 3 -> 2, 12 -> 1, 8 -> 1. With
    top_k_prime 2 the centres are 3 (count 2) and, of the tied 12 and 8, 12 (its pick scored
    9 > 8). Spans of 4 start at centre - 2: [1, 5) and [10, 14) clamped to the 13 middle keys."""
    m = 13
    keys = torch.zeros(1, m, 4)
    keys[0, 3, 0] = 10.0
    keys[0, 12, 1] = 9.0
    keys[0, 8, 2] = 8.0
    queries = torch.zeros(2, 2, 4)
    queries[0, 0, 0] = queries[0, 1, 0] = 1.0  # head 0: both queries -> key 3 (score 10)
    queries[1, 0, 1] = 1.0  # head 1, query 0 -> key 12 (score 9)
    queries[1, 1, 2] = 1.0  # head 1, query 1 -> key 8 (score 8)
    assert recall_middle(queries, keys, top_k=1, top_k_prime=2, span_size=4).tolist() == [1, 2, 3, 4, 10, 11, 12]
    # every centre when the clip allows it: key 8's span [6, 10) joins, overlapping nothing
    assert recall_middle(queries, keys, top_k=1, top_k_prime=3, span_size=4).tolist() == [
        1,
        2,
        3,
        4,
        6,
        7,
        8,
        9,
        10,
        11,
        12,
    ]
    # per head, not averaged over the group: the mean query of the group would pick key 3 only
    assert recall_middle(queries, keys, top_k=1, top_k_prime=1, span_size=1).tolist() == [3]
    assert recall_middle(queries, keys, top_k=1, top_k_prime=8, span_size=1).tolist() == [3, 8, 12]
    # a span at the edge is clamped, never wrapped: centre 12, span 32 -> the whole middle
    assert recall_middle(queries[1:, :1], keys, top_k=1, top_k_prime=1, span_size=32).tolist() == list(range(m))


def test_longcache_defaults_are_the_authors_and_share_the_budget():
    args = build_method("longcache", {}).args
    assert (args.top_k, args.span_size, args.sink_length, args.chunk_size) == (4, 32, 32, 512)
    # half the budget for the local window: (4096/2 - 32) // 32 = 63 spans of 32 tokens
    assert args.top_k_prime == 63 and args.recalled_tokens == 2016 and args.local_window == 2048
    for name in METHODS:
        assert build_method(name, {}).args.max_context_length == 4096
    small = build_method("longcache", {"max_context_length": 512, "chunk_size": 128}).args
    assert (small.top_k_prime, small.local_window) == (7, 256)
    assert build_method("longcache", {}).describe()["args"]["top_k_prime"] == 63  # recorded resolved


def test_statedclm_sigma_follows_the_cache_budget_unless_given():
    """The paper sets sigma equal to its budget (4096 and 4096); at 512, a fixed 4096 would
    barely tilt the scores toward recent entries."""
    assert build_method("statedclm", {}).args.sigma == 4096.0
    assert build_method("statedclm", {"max_context_length": 512, "chunk_size": 64}).describe()["args"]["sigma"] == 512.0
    assert build_method("statedclm", {"max_context_length": 512, "chunk_size": 64, "sigma": 100}).args.sigma == 100.0


def test_budget_arguments_are_validated():
    with pytest.raises(MethodArgumentError, match="must exceed sink_length \\+ chunk_size"):
        build_method("statedclm", {"max_context_length": 512, "chunk_size": 512})
    with pytest.raises(MethodArgumentError, match="local window"):
        build_method("longcache", {"max_context_length": 288, "chunk_size": 8, "top_k_prime": 9})
    with pytest.raises(MethodArgumentError, match="sigma"):
        build_method("statedclm", {"sigma": 0})


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("budget", [40, 256, 500])
def test_a_budget_that_cannot_work_names_arguments_that_do(name, budget):
    """max_context_length must exceed sink_length + chunk_size; the message's chunk_size (the largest
    power of two that fits) and max_context_length each make the method build."""
    import re

    with pytest.raises(MethodArgumentError) as caught:
        build_method(name, {"max_context_length": budget})  # chunk_size 512, sink_length 32
    message = str(caught.value)
    assert "must exceed sink_length + chunk_size (32 + 512)" in message
    fix = dict(re.findall(r"(chunk_size|max_context_length)=(\d+)", message))
    assert int(fix["max_context_length"]) == 32 + 512 + 1
    build_method(name, {"max_context_length": int(fix["max_context_length"])})
    chunk = {40: 4, 256: 128, 500: 256}[budget]
    assert (
        f"Fix: chunk_size={chunk} (the largest power of two that fits; any chunk_size up to {budget - 33} does)"
        in message
    )
    build_method(name, {"max_context_length": budget, "chunk_size": chunk})


def test_no_chunk_size_fits_beside_the_sinks():
    with pytest.raises(
        MethodArgumentError, match=r"Fix: max_context_length=545 or more \(no chunk_size fits beside sink_length=32\)"
    ):
        build_method("streamingllm", {"max_context_length": 32})
    with pytest.raises(MethodArgumentError, match=r"Fix: top_k_prime=7 or fewer, or max_context_length=321 or more"):
        build_method("longcache", {"max_context_length": 288, "chunk_size": 8, "top_k_prime": 9})
    build_method("longcache", {"max_context_length": 288, "chunk_size": 8, "top_k_prime": 7})
    build_method("longcache", {"max_context_length": 321, "chunk_size": 8, "top_k_prime": 9})
