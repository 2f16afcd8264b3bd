"""`method=kvpress`: NVIDIA kvpress presses as a `--model longmem` method (models/methods/kvpress.py,
models/kv_presses/).

* naming and arguments: presses named from kvpress's classes, listed with their typed fields,
  every wrong argument one message;
* without kvpress: one message naming the extra to install (runs in both virtualenvs: in
  .venv-kvpress the package is hidden);
* compression_ratio=0 compresses nothing, so scores and greedy generations are vanilla's;
* kvpress's StreamingLLMPress against our `streamingllm` on the same context and budget;
* a context too short for the press is one message.

The CLI runs (plain `lm_eval` with kvpress missing, a scoring and a generation task under a
press, the leaderboard) are in e2e/test_kvpress.py.
"""

from __future__ import annotations

import sys

import pytest
import torch

from lm_eval_longmem.models.method_framework.arguments import MethodArgumentError
from lm_eval_longmem.models.method_registry.resolution import resolve_method
from lm_eval_longmem.models.methods import kvpress as kvpress_method
from tests.helpers.markers import requires_kvpress
from tests.helpers.streaming import recorded
from tests.helpers.tiny_llama import build_tiny_model

EOS = 2


def method(**args):
    """`--model_args method=kvpress,...` as the wrapper resolves and builds it (values as text, as
    lm-eval hands them over)."""
    return resolve_method({"method": "kvpress", **{k: str(v) for k, v in args.items()}}).build()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """The shared tiny Llama (2 layers, 4 heads, 2 KV heads, ~93-token word vocabulary, seeded),
    with room for passkey prompts of a few hundred tokens."""
    return build_tiny_model(tmp_path_factory.mktemp("kvpress_tiny"), max_position_embeddings=1024)


@pytest.fixture(scope="module")
def model(model_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(model_dir).eval()


@pytest.fixture(scope="module")
def tokenizer(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


def token_ids(model, n, seed):
    return torch.randint(4, model.config.vocab_size, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


# --- 1. naming and arguments --------------------------------------------------------------------
@requires_kvpress
def test_press_names_follow_the_class_names():
    import kvpress

    from lm_eval_longmem.models.kv_presses.catalogue import press_name, presses

    named = {
        press_name(getattr(kvpress, cls)): cls
        for cls in (
            "SnapKVPress",
            "TOVAPress",
            "ExpectedAttentionPress",
            "KnormPress",
            "StreamingLLMPress",
            "PyramidKVPress",
            "KeyDiffPress",
        )
    }
    assert named == {
        "snapkv": "SnapKVPress",
        "tova": "TOVAPress",
        "expected_attention": "ExpectedAttentionPress",
        "knorm": "KnormPress",
        "streamingllm": "StreamingLLMPress",
        "pyramidkv": "PyramidKVPress",
        "key_diff": "KeyDiffPress",
    }
    assert set(named) <= set(presses())


@requires_kvpress
def test_methods_kvpress_lists_each_press_with_its_arguments(capsys):
    from lm_eval_longmem.cli.methods import main

    main(["kvpress"])
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("press=snapkv:"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].strip().startswith("press="))
    snapkv = [line.strip() for line in lines[start + 1 : end]]
    assert any(line.startswith("window_size: int = 64") for line in snapkv), snapkv
    assert any(line.startswith("compression_ratio: float = 0.0") for line in snapkv), snapkv
    adakv = next(i for i, line in enumerate(lines) if line.strip().startswith("press=adakv:"))
    assert lines[adakv + 1].strip().startswith("inner: str")  # a wrapper says it needs inner=
    composed = next(line for line in lines if line.strip().startswith("press=composed:"))
    assert "[not available:" in composed


@requires_kvpress
def test_unknown_press_is_one_message_with_the_presses_and_a_close_match():
    with pytest.raises(MethodArgumentError) as err:
        method(press="snapk")
    message = str(err.value)
    assert "unknown press='snapk'" in message and "Did you mean press=snapkv?" in message
    assert "Presses: " in message and "streamingllm" in message and "tova" in message
    assert "\n" not in message


@requires_kvpress
def test_unknown_argument_of_a_known_press_is_refused_by_the_wrapper_listing_the_press_arguments(model_dir):
    # resolve_method leaves an argument the press does not have for the wrapper (it may be a
    # from_pretrained option or a config attribute) ...
    resolved = resolve_method({"method": "kvpress", "press": "snapkv", "windw_size": "8"})
    assert resolved.other_args == {"windw_size": "8"} and resolved.args.window_size == 64
    # ... which refuses it with the press's own arguments listed, before any weights load.
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    with pytest.raises(ValueError) as err:
        LongMemLM(pretrained=str(model_dir), method="kvpress", press="snapkv", windw_size="8", device="cpu")
    message = str(err.value)
    assert "Unknown --model_args windw_size for --model longmem (method=kvpress)" in message
    assert "window_size: int = 64" in message and "compression_ratio: float = 0.0" in message


@requires_kvpress
@pytest.mark.parametrize(
    "args, expected",
    [
        ({"press": "snapkv", "compression_ratio": "abc"}, "argument compression_ratio='abc' is not a valid float"),
        (
            {"press": "snapkv", "compression_ratio": "1.5"},
            "press=snapkv: kvpress refused these arguments: Compression ratio",
        ),
        ({"press": "adakv"}, "press=adakv wraps another press: add inner=NAME"),
        ({"press": "snapkv", "inner": "tova"}, "press=snapkv wraps no other press, so inner= does not apply"),
        ({"press": "adakv", "inner": "snapk"}, "unknown inner='snapk'. Did you mean inner=snapkv?"),
        ({}, "method=kvpress needs press=NAME: one of"),
    ],
    ids=[
        "malformed",
        "kvpress-refuses",
        "wrapper-without-inner",
        "inner-on-a-plain-press",
        "unknown-inner",
        "no-press",
    ],
)
def test_each_bad_argument_is_one_message(args, expected):
    with pytest.raises(MethodArgumentError) as err:
        method(**args)
    assert expected in str(err.value) and "\n" not in str(err.value)


@requires_kvpress
def test_wrapper_press_takes_its_inner_press_arguments():
    built = method(press="key_rerotation", inner="streamingllm", compression_ratio=0.5, n_sink=2)
    press = built.make_press()
    assert type(press).__name__ == "KeyRerotationPress"
    assert type(press.press).__name__ == "StreamingLLMPress"
    assert (press.press.compression_ratio, press.press.n_sink) == (0.5, 2)
    assert built.make_press() is not press  # one fresh press per sequence


# --- 2. without kvpress ------------------------------------------------------------------------
@pytest.fixture
def kvpress_hidden(monkeypatch):
    """kvpress as if not installed (`import kvpress` raises ImportError), with the cached press
    catalogue and argument classes forgotten before and after."""
    from lm_eval_longmem.models.kv_presses import catalogue

    def forget():
        catalogue.presses.cache_clear()
        kvpress_method._arguments_class.cache_clear()

    forget()
    monkeypatch.setitem(sys.modules, "kvpress", None)
    yield
    monkeypatch.undo()
    forget()


def test_without_kvpress_the_method_names_the_extra_to_install(kvpress_hidden):
    from lm_eval_longmem.errors import LongMemError
    from lm_eval_longmem.models.kv_presses.catalogue import EXTRA_HINT, KVPressMissingError

    assert EXTRA_HINT == "pip install 'lm-eval-longmem[kvpress]'"
    with pytest.raises(KVPressMissingError) as err:
        resolve_method({"method": "kvpress", "press": "snapkv"})
    assert isinstance(err.value, LongMemError)  # printed as one message by lm_eval and lm-eval-longmem
    assert "method=kvpress needs NVIDIA's kvpress package" in str(err.value)
    assert EXTRA_HINT in str(err.value)
    # `lm-eval-longmem methods` still lists the method, saying what it needs
    lines = kvpress_method.KVPressMethod.describe_arguments(detailed=True)
    assert len(lines) == 1 and EXTRA_HINT in lines[0]


# --- 3. compression_ratio=0 is vanilla ---------------------------------------------------------
RATIO_ZERO = ["snapkv", "knorm", "streamingllm", "tova"]


@requires_kvpress
@pytest.mark.parametrize("press", RATIO_ZERO)
def test_ratio_zero_scores_as_the_wrappers_own_scorer(model, press):
    from lm_eval_longmem.models.runtime.scoring import ScoredSpan, TeacherForcedScorer

    lengths, targets = [150, 110, 180], [20, 7, 33]
    rows = [token_ids(model, n, seed=10 + i) for i, n in enumerate(lengths)]
    batch = torch.full((len(rows), max(lengths)), 3)
    for b, row in enumerate(rows):
        batch[b, : len(row)] = torch.tensor(row)
    spans = [ScoredSpan(n - t, tuple(row[n - t :])) for row, n, t in zip(rows, lengths, targets)]
    built = method(press=press, compression_ratio=0)
    pressed = built.make_scorer(model)
    sequences = recorded(pressed)
    got = pressed.score(batch, spans)
    # nothing was removed: the last row's cache ends holding its whole context and continuation
    assert sequences[-1].kept_entries() == [lengths[-1]] * model.config.num_hidden_layers
    want = TeacherForcedScorer(model).score(batch, spans)
    for g, w in zip(got, want):
        assert (g.num_correct, g.num_tokens, g[1]) == (w.num_correct, w.num_tokens, w[1])
        # Not bit-identical: vanilla runs each row in one forward, the press prefills the context
        # and then feeds the continuation against the cache (other matmul shapes, other sums).
        assert g[0] == pytest.approx(w[0], abs=1e-4)


@requires_kvpress
@pytest.mark.parametrize("press", RATIO_ZERO)
def test_ratio_zero_generates_as_vanilla(model, tokenizer, press):
    from lm_eval_longmem.models.runtime.generation import GenerationRequest
    from lm_eval_longmem.models.runtime.prefix_reuse_generator import PrefixReuseGenerator

    built = method(press=press, compression_ratio=0)
    assert built.make_generator(model, tokenizer) is not None
    vanilla = PrefixReuseGenerator(model, tokenizer, reuse=False)  # the wrapper's default, re-encoding each prompt
    for seed, n in [(1, 140), (2, 100)]:
        request = GenerationRequest(
            tuple(token_ids(model, n, seed)), max_new_tokens=12, stop_token_ids=frozenset({EOS})
        )
        got = built.make_generator(model, tokenizer).generate(request)
        assert got == vanilla.generate(request) and got


@requires_kvpress
def test_ratio_zero_gives_vanillas_metrics_through_the_harness(model_dir, corpus_file):
    import lm_eval

    import lm_eval_longmem

    lm_eval_longmem.register()

    def metrics(model_args):
        results = lm_eval.simple_evaluate(
            model="longmem",
            model_args=f"pretrained={model_dir},device=cpu,{model_args}",
            tasks=["forgetting_curve"],
            metadata={
                "fc_corpus": str(corpus_file),
                "fc_max_length": 40,
                "fc_points": 3,
                "fc_samples": 2,
                "fc_seed": 3,
            },
        )
        return results["results"]["forgetting_curve"]

    pressed = metrics("method=kvpress,press=snapkv,compression_ratio=0")
    vanilla = metrics("method=vanilla")
    assert_same_metrics(pressed, vanilla)
    assert [p["length"] for p in pressed["curve,none"]["points"]] == [8, 24, 40]


def assert_same_metrics(got, want, where="metrics"):
    """Equal, numbers within 1e-4 (a log-likelihood summed in another order)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), where
        for key in want:
            assert_same_metrics(got[key], want[key], f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_metrics(g, w, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert got == pytest.approx(want, abs=1e-4, nan_ok=True), where
    else:
        assert got == want, where


# --- 4. kvpress's StreamingLLMPress against our streamingllm -------------------------------------
@requires_kvpress
def test_streamingllm_press_keeps_the_same_entries_as_ours_at_other_positions(model):
    """Both keep the first S and the most recent B - S of a context's n entries; they differ in the
    positions the kept keys carry.

    Setup: n = 80 distinct tokens (so every layer's value rows, which carry no position, name their
    token), budget B = 20, S = 4 sinks, kvpress compression_ratio r = 0.75 (int(n * (1 - r)) = 20).

    Ours: `streamingllm` runs the whole context as one chunk (every token attends to all n, as in
    kvpress's prefill) and then compresses to B before the next token. Not quite the setup first
    planned (chunk_size=n, max_context_length=B): `BudgetArgs` refuses a chunk_size that does not
    fit under max_context_length - sink_length, and the runner's shrink-before-a-chunk cannot take
    a chunk larger than the budget on an empty cache (StreamingLLMPolicy.shrink fails on it). So
    the runner is driven directly: `feed_chunk(context, shrink=False)` (the decoding path that lets
    entries pile up past the budget), then `feed_token(next)`, which shrinks the cache to B once
    (a whole chunk has piled up past it) and appends the new token. The first B entries are the
    compressed context.

    kvpress: `PressedSequence.prefill(context)` under StreamingLLMPress(r, n_sink=S), and under
    KeyRerotationPress(StreamingLLMPress(r, n_sink=S)) (`press=key_rerotation,inner=streamingllm`).

    Found (all measured on this model, float32, CPU):
    * the same token positions {0..S-1} + {n-B+S..n-1} are kept in every layer and KV head, by all
      three; value rows equal to within 1e-5 (they came out bit-identical: our decoder and HF's
      give the same full-context prefill here);
    * ours stores keys before RoPE and rotates them at positions 0..B-1 (re-indexed in the cache, as
      the StreamingLLM paper does); KeyRerotation's keys equal those within 1e-5 (measured <= 7.5e-8);
    * plain StreamingLLMPress keeps each key rotated at its original position: equal to ours rotated
      at the kept tokens' original positions (within 1e-5, measured 0), so equal to ours re-indexed
      for the S sinks (same positions) and different for the recent entries (moved by n - B:
      every recent key differs from ours re-indexed by 0.06 to 0.77 in its largest component);
    * plain StreamingLLMPress keeps its rows in the order topk returns over tied scores, not in
      position order (here 71, 3, 0, 64..70, 1, 72..79, 2 in every layer and head; harmless:
      nothing masks among cached entries, so rows are compared as sets); KeyRerotation sorts
      them, as ours are;
    * the next token continues at position B in ours and in kvpress with rerotation (kvpress's
      pipeline continues from the compressed length), at n in plain kvpress: its logits match ours
      with rerotation (within 1e-6, measured 9e-8) and not without (measured 2.3e-4 apart, on
      logits of at most 0.34: a random model barely reads positions, so the gap is small, but
      it is 2500 times the rounding).
    """
    from transformers import DynamicCache

    from lm_eval_longmem.models.bounded_cache import BoundedCacheRunner
    from lm_eval_longmem.models.kv_presses.pressed_sequence import PressedSequence
    from lm_eval_longmem.models.runtime.llama_decoder import Decoder, rotate

    n, budget, sinks, ratio = 80, 20, 4, 0.75
    assert int(n * (1 - ratio)) == budget and model.config.vocab_size - 4 > n  # n + 1 distinct tokens
    order = torch.randperm(model.config.vocab_size - 4, generator=torch.Generator().manual_seed(5)) + 4
    context, next_token = order[:n].tolist(), order[n].item()
    kept = list(range(sinks)) + list(range(n - (budget - sinks), n))

    decoder = Decoder(model)
    ours_method = resolve_method(
        {"method": "streamingllm", "sink_length": str(sinks), "max_context_length": str(budget), "chunk_size": "8"}
    ).build()
    runner = BoundedCacheRunner(decoder, ours_method.make_policy())
    with torch.no_grad():
        runner.feed_chunk(context, shrink=False)
        assert len(runner) == n and runner.shrinks == 0
        ours_next = decoder.logits(runner.feed_token(next_token)[-1])
    assert runner.shrinks == 1 and len(runner) == budget + 1
    ours = [cache.prefix(budget) for cache in runner.caches]

    def pressed(**args):
        sequence = PressedSequence(model, method(compression_ratio=ratio, n_sink=sinks, **args).make_press(), 64)
        sequence.prefill(context)
        return sequence

    plain, rerotated = pressed(press="streamingllm"), pressed(press="key_rerotation", inner="streamingllm")
    assert plain.kept_entries() == rerotated.kept_entries() == [budget] * model.config.num_hidden_layers
    assert (plain.next_position, rerotated.next_position) == (n, budget)
    full = DynamicCache()
    with torch.no_grad():
        model.model(input_ids=torch.tensor([context]), past_key_values=full, use_cache=True)

    def positions(values, full_values):
        """[Hkv, kept] original position of each kept value row (its exact match in the full cache)."""
        distance = torch.cdist(values.float(), full_values.float(), compute_mode="donot_use_mm_for_euclid_dist")
        assert distance.min(-1).values.max() < 1e-5
        return distance.argmin(-1)

    ((cos, sin), *_) = decoder.rope(n, ours[0].keys)  # one table per layer; all alike on Llama
    at_original = torch.tensor(kept)
    for layer in range(model.config.num_hidden_layers):
        full_values = full.layers[layer].values[0]
        ours_positions = positions(ours[layer].values, full_values)
        assert ours_positions.tolist() == [kept] * decoder.num_kv_heads  # in position order
        for sequence in (plain, rerotated):
            found = positions(sequence.cache.layers[layer].values[0], full_values)
            assert [sorted(p) for p in found.tolist()] == [kept] * decoder.num_kv_heads
        assert positions(rerotated.cache.layers[layer].values[0], full_values).tolist() == [kept] * decoder.num_kv_heads

        ours_reindexed = rotate(ours[layer].keys, cos[:budget], sin[:budget])
        ours_at_original = rotate(ours[layer].keys, cos[at_original], sin[at_original])
        torch.testing.assert_close(rerotated.cache.layers[layer].keys[0], ours_reindexed, atol=1e-5, rtol=1e-5)
        plain_keys = plain.cache.layers[layer].keys[0]
        plain_order = positions(plain.cache.layers[layer].values[0], full_values).argsort(-1)
        plain_keys = plain_keys.gather(1, plain_order[..., None].expand_as(plain_keys))  # into position order
        torch.testing.assert_close(plain_keys, ours_at_original, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(plain_keys[:, :sinks], ours_reindexed[:, :sinks], atol=1e-5, rtol=1e-5)
        assert (plain_keys[:, sinks:] - ours_reindexed[:, sinks:]).abs().amax(-1).min() > 1e-3  # every recent key moved

    rerotated_next = rerotated.logits([next_token])[-1]
    plain_next = plain.logits([next_token])[-1]
    # measured: 9e-8 with rerotation, 2.3e-4 without (this random model's logits are small: |logit| <= 0.34)
    torch.testing.assert_close(rerotated_next, ours_next, atol=1e-6, rtol=1e-5)
    assert (plain_next - ours_next).abs().max() > 2e-5


# --- 6. a context too short for the press --------------------------------------------------------
@requires_kvpress
def test_context_shorter_than_the_press_window_is_one_message(model):
    from lm_eval_longmem.errors import LongMemError
    from lm_eval_longmem.models.kv_presses.pressed_sequence import PressRefusedError
    from lm_eval_longmem.models.runtime.scoring import ScoredSpan

    built = method(press="snapkv", compression_ratio=0.5, window_size=64)
    row = token_ids(model, 30, seed=3)
    with pytest.raises(PressRefusedError) as err:
        built.make_scorer(model).score(torch.tensor([row]), [ScoredSpan(20, tuple(row[20:]))])
    assert isinstance(err.value, LongMemError)  # one message through lm_eval, not a traceback
    message = str(err.value)
    assert "press SnapKVPress refused a context of 20 tokens" in message and "window size 64" in message
    assert err.value.__cause__ is None and err.value.__suppress_context__
