"""`overlength=` on `--model longmem`: the policies on the tiny Llama (128 tokens), held to
what they promise: middle is LongBench's cut, left gives lm-eval hf's scores, skip leaves whole
documents out, refuse is today's refusal. e2e/test_overlength_and_by_length.py runs them
through `lm_eval` on a LongBench-format task."""

from __future__ import annotations

import math
import pickle

import pytest
from lm_eval.api.instance import Instance

from lm_eval_longmem.common.length_bins import power_of_two_bin
from lm_eval_longmem.lm_eval_model.longmem import ContextTooLongError, LongMemLM
from lm_eval_longmem.lm_eval_model.score_fingerprint import score_fingerprint
from lm_eval_longmem.models.runtime.overlength import (
    CutScore,
    CutText,
    SkippedScore,
    SkippedText,
    UnknownOverlengthPolicyError,
    cut,
    parse_policy,
)
from lm_eval_longmem.models.runtime.requests import TokenText

LONG = " ".join(["sea", "ship", "king", "night"] * 50)  # 200 tokens, one per word
GREEDY = {"until": [], "max_gen_toks": 4, "do_sample": False}


def model(tiny_model_dir, policy):
    return LongMemLM(pretrained=str(tiny_model_dir), method="vanilla", device="cpu", overlength=policy)


@pytest.fixture(scope="module")
def refusing(tiny_model_dir):
    return model(tiny_model_dir, "refuse")


def loglikelihood(task, doc_id, context, continuation):
    return Instance("loglikelihood", {}, (context, continuation), 0, metadata=(task, doc_id, 1))


def test_policies_parse_and_an_unknown_one_lists_the_valid_ones(tiny_model_dir):
    assert [parse_policy(p) for p in (None, "SKIP", "middle", "left", "refuse")] == [
        "refuse",
        "skip",
        "middle",
        "left",
        "refuse",
    ]
    with pytest.raises(UnknownOverlengthPolicyError, match=r"overlength=cut: unknown policy; valid: refuse, skip"):
        model(tiny_model_dir, "cut")


def test_middle_keeps_start_and_end_left_keeps_the_end():
    ids = list(range(10))
    assert cut(ids, 6, "middle") == [0, 1, 2, 7, 8, 9]
    assert cut(ids, 5, "middle") == [0, 1, 7, 8, 9]  # the end (the question) gets the odd token
    assert cut(ids, 4, "left") == [6, 7, 8, 9]
    assert cut(ids, 12, "middle") == ids
    assert [power_of_two_bin(n).label for n in (0, 1, 129, 4096)] == ["0-1", "1-2", "128-256", "4k-8k"]


def test_skip_and_cut_markers_survive_the_request_cache_with_their_lengths():
    score, text = pickle.loads(pickle.dumps((SkippedScore(300), SkippedText(77))))
    assert isinstance(score, SkippedScore) and score.tokens == 300 and score[0] == -math.inf and score[1] is False
    assert isinstance(text, SkippedText) and text.tokens == 77 and text == ""
    score, text = pickle.loads(pickle.dumps((CutScore((-1.5, True), 300, 40), CutText("an answer", 77, 9))))
    assert isinstance(score, CutScore) and score == (-1.5, True) and (score.tokens, score.removed) == (300, 40)
    assert isinstance(text, CutText) and text == "an answer" and (text.tokens, text.removed) == (77, 9)


def test_refuse_is_todays_refusal_and_names_the_policies(refusing):
    with pytest.raises(ContextTooLongError, match=r"longer than the 128 tokens.*overlength=skip\|middle\|left"):
        refusing.loglikelihood([loglikelihood("t", 0, LONG, " ship")])


def test_middle_scores_exactly_the_longbench_cut_input(tiny_model_dir, refusing):
    lm = model(tiny_model_dir, "middle")
    (score,) = lm.loglikelihood([loglikelihood("t", 0, LONG, " ship sea")])
    context, continuation = refusing._encode_pair(LONG, " ship sea")
    keep = 128 + 1 - len(continuation)
    head = keep // 2
    cut_context = context[:head] + context[len(context) - (keep - head) :]
    (expected,) = refusing.loglikelihood(
        [Instance("loglikelihood", {}, (TokenText("x", cut_context), TokenText(" y", continuation)), 0)]
    )
    assert score == pytest.approx(expected, abs=1e-6)
    # the score says what was cut (the results count it from there, also when --use_cache answers)
    assert isinstance(score, CutScore) and (score.tokens, score.removed) == (len(context) + 1, len(context) - keep)
    (uncut,) = lm.loglikelihood([loglikelihood("t", 1, "sea ship", " king")])
    assert not isinstance(uncut, CutScore)


def test_left_gives_lm_eval_hf_scores(tiny_model_dir):
    from lm_eval.models.huggingface import HFLM

    hf = HFLM(pretrained=str(tiny_model_dir), device="cpu", batch_size=1)
    requests = [loglikelihood("t", 0, LONG, " ship sea"), loglikelihood("t", 1, "sea ship", " king")]
    theirs = hf.loglikelihood(requests, disable_tqdm=True)
    ours = model(tiny_model_dir, "left").loglikelihood(requests, disable_tqdm=True)
    for (our_ll, our_greedy), (their_ll, their_greedy) in zip(ours, theirs):
        assert our_ll == pytest.approx(their_ll, abs=1e-4) and our_greedy == their_greedy


def test_skip_leaves_out_every_choice_of_an_over_length_document(tiny_model_dir, refusing):
    lm = model(tiny_model_dir, "skip")
    context = " ".join(["sea"] * 127)  # with " ship": 127 tokens to read (fits 128); " ship sea king": 129
    requests = [
        loglikelihood("t", 0, context, " ship"),
        loglikelihood("t", 0, context, " ship sea king"),
        loglikelihood("t", 1, "sea ship", " king"),
    ]
    first, second, third = lm.loglikelihood(requests, disable_tqdm=True)
    assert isinstance(first, SkippedScore) and isinstance(second, SkippedScore) and first.tokens == 129
    (expected,) = refusing.loglikelihood([requests[2]], disable_tqdm=True)
    assert not isinstance(third, SkippedScore) and third == pytest.approx(expected)


def test_generation_skip_and_middle(tiny_model_dir, refusing):
    request = Instance("generate_until", {}, (LONG, dict(GREEDY)), 0, metadata=("t", 0, 1))
    (skipped,) = model(tiny_model_dir, "skip").generate_until([request], disable_tqdm=True)
    assert isinstance(skipped, SkippedText) and skipped.tokens == 200 + 4
    middle = model(tiny_model_dir, "middle")
    (text,) = middle.generate_until([request], disable_tqdm=True)
    prompt = refusing.tok_encode(LONG)
    kept = cut(prompt, 128 - 4, "middle")
    decoded = refusing.tok_decode(kept)
    (expected,) = refusing.generate_until(
        [Instance("generate_until", {}, (TokenText(decoded, kept), dict(GREEDY)), 0)], disable_tqdm=True
    )
    assert text == expected
    assert isinstance(text, CutText) and (text.tokens, text.removed) == (len(prompt), len(prompt) - (128 - 4))


def test_the_cache_fingerprint_records_a_policy_that_changes_scores(tiny_model_dir, refusing):
    assert "overlength" not in score_fingerprint(refusing)  # the default keeps existing databases' names
    assert score_fingerprint(model(tiny_model_dir, "middle"))["overlength"] == "middle"


def test_start_up_check_refuses_an_unknown_policy_before_anything_loads():
    import argparse

    from lm_eval_longmem.harness import preflight

    args = argparse.Namespace(model="longmem", model_args={"overlength": "trim"}, tasks=None, metadata=None)
    with pytest.raises(UnknownOverlengthPolicyError, match=r"valid: refuse, skip, middle, left"):
        preflight.check(args)
    preflight.check(argparse.Namespace(model="longmem", model_args={"overlength": "skip"}, tasks=None, metadata=None))
