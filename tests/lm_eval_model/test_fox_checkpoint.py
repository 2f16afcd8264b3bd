"""A FoX checkpoint through `--model longmem`: picked up as method=fox with nothing else, scored
and generated with its own cache, and refused (clearly) where a method does not apply."""

import time

import pytest
import torch

from lm_eval_longmem.models.fox.compatibility import ArchitectureMismatchError
from tests.helpers.cli_runs import BIN, results_of, run, small_protocol
from tests.helpers.fox_fixtures import build_tiny_fox


@pytest.fixture(scope="module")
def tiny_fox_dir(tmp_path_factory):
    return build_tiny_fox(tmp_path_factory.mktemp("tiny_fox"))


@pytest.fixture(scope="module")
def fox_lm(tiny_fox_dir):
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    return LongMemLM(pretrained=str(tiny_fox_dir), device="cpu")


def test_a_fox_checkpoint_needs_no_method_argument(fox_lm):
    assert fox_lm.longmem_method.name == "fox"
    info = fox_lm.get_model_info()
    assert info["longmem_method"] == "fox"
    args = info["longmem_method_args"]
    assert args["fgate_type"] == "full" and args["use_output_gate"] and args["use_k_shift"] and not args["use_rope"]
    assert info["longmem_scoring"] in {None, "split"}


def test_the_released_tokenizer_convention_is_applied(fox_lm):
    assert type(fox_lm.tokenizer).__name__ == "JSONGPT2Tokenizer"
    ids = fox_lm.tok_encode('a "quote"\nnew line')
    assert ids[0] == fox_lm.tokenizer.bos_token_id  # BOS prepended, as the models were trained
    assert fox_lm.tok_decode(ids[1:]) == 'a "quote"\nnew line'


def test_scoring_equals_the_models_own_log_probabilities(fox_lm):
    from lm_eval.api.instance import Instance

    context, continuation = "the cat sat on", " the mat\nand slept"
    ((loglikelihood, _),) = fox_lm.loglikelihood(
        [Instance("loglikelihood", {}, (context, continuation), 0)], disable_tqdm=True
    )
    context_ids, continuation_ids = fox_lm._encode_pair(context, continuation)
    ids = torch.tensor([context_ids + continuation_ids])
    with torch.no_grad():
        logprobs = torch.log_softmax(fox_lm.model(ids).logits.float(), dim=-1)[0]
    start = len(context_ids) - 1
    expected = sum(float(logprobs[start + i, t]) for i, t in enumerate(continuation_ids))
    assert loglikelihood == pytest.approx(expected, abs=1e-4)
    assert fox_lm.scorer.strategy == "split"


def test_generation_with_prefix_reuse_equals_fresh_greedy_decoding(fox_lm):
    from lm_eval.api.instance import Instance

    until = {"until": ["\n\n"], "max_gen_toks": 6, "do_sample": False}
    prompts = ["the sea and the ship said", "the sea and the ship ran", "old gold stone"]
    requests = [Instance("generate_until", {}, (p, until), i) for i, p in enumerate(prompts)]
    fox_lm.reuse_prefix = True
    reused = fox_lm.generate_until(requests, disable_tqdm=True)
    fox_lm.reuse_prefix = False
    fresh = fox_lm.generate_until(requests, disable_tqdm=True)
    fox_lm.reuse_prefix = True
    assert reused == fresh
    eos = fox_lm.tokenizer.eos_token_id
    for prompt, text in zip(prompts, fresh):  # and both equal transformers' own greedy decoding
        ids = torch.tensor([fox_lm.tok_encode(prompt)])
        out = fox_lm.model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=6, do_sample=False, pad_token_id=eos
        )
        new_tokens = out[0, ids.shape[1] :].tolist()
        new_tokens = new_tokens[: new_tokens.index(eos)] if eos in new_tokens else new_tokens
        assert text == fox_lm.tok_decode(new_tokens).split("\n\n")[0]


@pytest.mark.parametrize(
    "method, message", [("yarn", "FoX has no RoPE"), ("statedclm", "Use method=fox"), ("vanilla", "Use method=fox")]
)
def test_methods_that_do_not_apply_to_fox_are_refused(tiny_fox_dir, method, message):
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    with pytest.raises(ArchitectureMismatchError, match=message):
        LongMemLM(pretrained=str(tiny_fox_dir), method=method, device="cpu")


def test_method_fox_on_a_llama_says_fox_is_an_architecture(tiny_model_dir):
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    with pytest.raises(ArchitectureMismatchError, match="FoX is an architecture"):
        LongMemLM(pretrained=str(tiny_model_dir), method="fox", device="cpu")


def test_an_official_checkpoint_offline_fails_fast_with_the_fix():
    from lm_eval_longmem.common.hub import HubUnavailableError
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    started = time.monotonic()
    with pytest.raises(HubUnavailableError) as err:
        LongMemLM(pretrained="zhixuan-lin/fox-pro-760m-longcrawl64-48b", device="cpu")
    assert time.monotonic() - started < 20  # no Hub retries (those took ~25 s); generous for a busy CI
    assert "zhixuan-lin/fox-pro-760m-longcrawl64-48b" in str(err.value)


def test_a_fox_checkpoint_through_the_lm_eval_cli(tiny_fox_dir, corpus_file, tmp_path):
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_fox_dir}",
            "--tasks",
            "forgetting_curve",
            *small_protocol(corpus_file),
            "--output_path",
            str(out),
        ]
    )
    results = results_of(out)
    assert results["config"]["longmem_method"] == "fox"
    assert results["config"]["longmem_method_args"]["use_output_norm"] is True
    points = results["results"]["forgetting_curve"]["curve,none"]["points"]
    assert [p["length"] for p in points] == [8, 24, 40] and all(0 <= p["copy_mean"] <= 1 for p in points)


def test_fox_generates_through_the_lm_eval_cli(tiny_fox_dir, tmp_path):
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_fox_dir}",
            "--tasks",
            "longmem_passkey",
            "--metadata",
            "pk_lengths=[300]",
            "pk_depths=[50]",
            "pk_samples=2",
            "--output_path",
            str(out),
        ]
    )
    results = results_of(out)
    assert results["config"]["longmem_method"] == "fox"
    assert results["results"]["longmem_passkey"]["grid,none"]["num_samples"] == [[2]]
