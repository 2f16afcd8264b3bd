"""LongMemLM.generate_until and the prefix-reusing generator, on the tiny Llama."""

import pytest
import torch

from lm_eval_longmem.lm_eval_model.longmem import ContextTooLongError, LongMemLM, UnknownModelArgumentError
from lm_eval_longmem.models.runtime.generation import GenerationRequest
from lm_eval_longmem.models.runtime.prefix_reuse_generator import PrefixReuseGenerator, common_prefix_length
from lm_eval_longmem.models.runtime.requests import TokenText
from tests.helpers.generation_requests import GREEDY, request

SHARED = "the king of the sea and the old ship were in the house at night and the river was dark"
QUESTIONS = ["who was the king", "what was dark", "the gold stone", "who was the king of the sea", "water"]


@pytest.fixture(scope="module")
def lm(tiny_model_dir):
    return LongMemLM(pretrained=str(tiny_model_dir), method="vanilla", device="cpu")


@pytest.fixture(scope="module")
def lm_fresh(tiny_model_dir):
    return LongMemLM(pretrained=str(tiny_model_dir), method="vanilla", device="cpu", reuse_prefix="false")


def prompts():
    return [f"{SHARED} . {q}" for q in QUESTIONS]


def hf_greedy(lm, context, max_new_tokens):
    """Plain transformers `generate` on the same ids: the oracle."""
    ids = torch.tensor([lm.tok_encode(context)])
    with torch.no_grad():
        out = lm.model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=lm.tokenizer.pad_token_id,
            eos_token_id=lm.eot_token_id,
        )
    return lm.tok_decode(out[0, ids.shape[1] :].tolist())


def test_common_prefix_length():
    assert common_prefix_length((1, 2, 3), (1, 2, 4, 5)) == 2
    assert common_prefix_length((1, 2), (1, 2, 3)) == 2
    assert common_prefix_length((), (1,)) == 0 and common_prefix_length((7,), (8,)) == 0


def test_results_match_plain_hf_generate_in_request_order(lm, lm_fresh):
    reqs = [request(p, idx=i) for i, p in enumerate(prompts())]
    expected = [hf_greedy(lm, p, GREEDY["max_gen_toks"]) for p in prompts()]
    assert lm.generate_until(reqs) == expected  # reuse on (the default)
    assert lm_fresh.generate_until(reqs) == expected
    assert len(set(expected)) > 1  # the check can tell the prompts apart


def test_reuse_encodes_the_shared_prefix_once(lm, lm_fresh):
    """Tokens through the model body: fresh minus reuse is exactly what the shared prefixes save."""
    reqs = [request(p, idx=i) for i, p in enumerate(prompts())]
    fed = {}
    for name, model in (("reuse", lm), ("fresh", lm_fresh)):
        seen = []
        hook = model.model.model.register_forward_pre_hook(
            lambda mod, args, kwargs, seen=seen: seen.append(kwargs["input_ids"].shape[1]), with_kwargs=True
        )
        try:
            model.generate_until(reqs)
        finally:
            hook.remove()
        fed[name] = sum(seen)
    ids = sorted(tuple(lm.tok_encode(p)) for p in prompts())
    saved = sum(min(common_prefix_length(a, b), len(b) - 1) for a, b in zip(ids, ids[1:]))
    assert saved >= 4 * len(lm.tok_encode(SHARED))  # the five prompts share SHARED
    assert fed["fresh"] - fed["reuse"] == saved


def test_generator_crops_to_the_shared_prefix(lm):
    gen = PrefixReuseGenerator(lm.model, lm.tokenizer)
    base = tuple(lm.tok_encode(SHARED))
    a, b = base + (10, 11), base + (12,)
    for prompt in (a, b, b):
        gen.generate(GenerationRequest(prompt, 3, frozenset({lm.eot_token_id})))
    # b reuses base (the shared prefix); the repeated b reuses all but its last token.
    assert gen.reused_tokens == len(base) + len(b) - 1
    assert gen.prompt_tokens == len(a) + 2 * len(b)


def test_stop_strings_trim_the_output(lm):
    (free,) = lm.generate_until([request(prompts()[0])])
    words = free.split()
    assert len(words) >= 2, free
    stop = " " + words[1]
    (trimmed,) = lm.generate_until([request(prompts()[0], {**GREEDY, "until": [stop]})])
    assert trimmed == free.split(stop)[0]
    assert stop not in trimmed


def test_max_gen_toks_is_honoured(lm):
    (out,) = lm.generate_until([request(prompts()[1], {**GREEDY, "max_gen_toks": 2})])
    assert len(lm.tok_encode(out)) <= 2


def test_eos_stops_generation(lm, monkeypatch):
    """A checkpoint whose eos is the first greedy token yields an empty answer."""
    ids = torch.tensor([lm.tok_encode(prompts()[2])])
    with torch.no_grad():
        first = int(lm.model(ids).logits[0, -1].argmax())
    monkeypatch.setattr(lm.model.generation_config, "eos_token_id", first)
    (out,) = lm.generate_until([request(prompts()[2])])
    assert out == ""


def test_token_text_contexts_keep_their_ids(lm):
    ids = lm.tok_encode(prompts()[3])
    text_says_something_else = TokenText("water water", ids)
    (out,) = lm.generate_until([request(text_says_something_else)])
    assert out == hf_greedy(lm, prompts()[3], GREEDY["max_gen_toks"])


def test_cache_hook_gets_every_request(lm):
    stored = []

    class Hook:
        def add_partial(self, kind, key, value):
            stored.append((kind, key, value))

    reqs = [request(p, idx=i) for i, p in enumerate(prompts()[:3])]
    saved, lm.cache_hook = lm.cache_hook, Hook()
    try:
        outs = lm.generate_until(reqs)
    finally:
        lm.cache_hook = saved
    assert sorted((k, ctx, out) for k, (ctx, _), out in stored) == sorted(
        ("generate_until", r.args[0], o) for r, o in zip(reqs, outs)
    )
    assert all(key[1] == GREEDY for _, key, _ in stored)


def test_too_long_prompt_is_refused_not_truncated(lm):
    long_context = " ".join(["sea"] * 125)  # 125 tokens + 6 new > 128
    with pytest.raises(
        ContextTooLongError, match=r"(?s)task_x, doc 0.*125 tokens.*up to 6 new.*128 tokens.*max_gen_toks"
    ):
        lm.generate_until([request(prompts()[0]), request(long_context)])
    (ok,) = lm.generate_until([request(" ".join(["sea"] * 122))])  # 122 + 6 fits exactly
    assert isinstance(ok, str)


def test_a_method_generator_takes_over(lm, monkeypatch):
    seen = []

    class Echo:
        def generate(self, generation):
            seen.append(generation)
            return list(generation.prompt_ids[-2:])

    monkeypatch.setattr(lm.longmem_method, "make_generator", lambda model, tokenizer: Echo())
    (out,) = lm.generate_until([request("the old ship", {"until": ["\n"], "max_gen_toks": 4, "temperature": 0.0})])
    assert out == "old ship"
    (g,) = seen
    assert g.max_new_tokens == 4 and g.stop_strings[0] == "\n" and lm.eot_token_id in g.stop_token_ids
    assert g.sampling == {"do_sample": False}


def test_sampling_options_reach_the_generator(lm, monkeypatch):
    seen = []

    class Record:
        def generate(self, generation):
            seen.append(generation.sampling)
            return []

    monkeypatch.setattr(lm.longmem_method, "make_generator", lambda model, tokenizer: Record())
    lm.generate_until(
        [request("sea", {"until": [], "max_gen_toks": 4, "do_sample": True, "temperature": 0.7, "top_p": 0.9})]
    )
    assert seen == [{"do_sample": True, "temperature": 0.7, "top_p": 0.9}]


def test_reuse_prefix_is_validated_and_listed(tiny_model_dir):
    with pytest.raises(ValueError, match="reuse_prefix='maybe'"):
        LongMemLM(pretrained=str(tiny_model_dir), device="cpu", reuse_prefix="maybe")
    with pytest.raises(
        UnknownModelArgumentError, match=r"Wrapper arguments: method, reuse_prefix \(bool, default True"
    ):
        LongMemLM(pretrained=str(tiny_model_dir), device="cpu", reuse_prefx=False)


def test_results_file_records_reuse(lm, lm_fresh):
    assert lm.get_model_info()["longmem_reuse_prefix"] is True
    assert lm_fresh.get_model_info()["longmem_reuse_prefix"] is False


@pytest.mark.parametrize(
    "method_args",
    [
        {"method": "dynamic_ntk", "factor": 2},
        {"method": "statedclm"},
        {"method": "streamingllm"},
        {"method": "infini", "segment_length": 8},
    ],
)
def test_results_file_says_no_reuse_where_the_method_re_encodes_every_prompt(tiny_model_dir, method_args):
    """reuse_prefix=true (the default) was recorded as given, though these methods never reuse."""
    lm_method = LongMemLM(pretrained=str(tiny_model_dir), device="cpu", **method_args)
    assert lm_method.reuse_prefix is True and lm_method.get_model_info()["longmem_reuse_prefix"] is False


@pytest.mark.parametrize(
    "method_args",
    [
        {"method": "self_extend", "window": 4, "group": 2},
        {"method": "lm_infinite", "global_tokens": 2, "local_window": 8},
        {"method": "yarn", "factor": 2},
    ],
)
def test_rope_methods_give_the_same_answers_with_and_without_prefix_reuse(tiny_model_dir, method_args):
    """Windows shorter than the shared prefix: the reused cache must hold the same keys."""
    reqs = [request(p, idx=i) for i, p in enumerate(prompts())]
    reusing = LongMemLM(pretrained=str(tiny_model_dir), device="cpu", **method_args)
    fresh = LongMemLM(pretrained=str(tiny_model_dir), device="cpu", reuse_prefix=False, **method_args)
    assert reusing._make_generator().reuse
    assert reusing.generate_until(reqs) == fresh.generate_until(reqs)


def test_dynamic_ntk_re_encodes_prefixes(tiny_model_dir):
    """Its RoPE base is set by the whole prompt's length, so a prefix's cache is not reusable."""
    lm_dynamic = LongMemLM(pretrained=str(tiny_model_dir), device="cpu", method="dynamic_ntk", factor=2)
    assert not lm_dynamic._make_generator().reuse
