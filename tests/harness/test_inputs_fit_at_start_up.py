"""Inputs longer than the model takes are refused at start-up, before the model loads: the
start-up check reads the local checkpoint's config and tokenizer (no weights) and asks each task
that declares an `inputs_check`. Nothing is truncated, and nothing waits for the model to load
first. The real command: e2e/test_errors_without_traceback.py (length-past-the-model)."""

import argparse

import pytest

from lm_eval_longmem.harness import preflight
from lm_eval_longmem.tasks.task_options import TaskOptionError


def check(model_dir, tasks, gen_kwargs=None, **options):
    model_args = {"pretrained": str(model_dir), "method": "vanilla"}
    namespace = argparse.Namespace(
        model="longmem", model_args=model_args, tasks=tasks, metadata=options, gen_kwargs=gen_kwargs
    )
    preflight.check(namespace)


def test_passkey_lengths_past_the_model_are_refused(tiny_model_dir):
    with pytest.raises(TaskOptionError, match=r"length\(s\) \[4096\] do not fit: the model takes 128 tokens"):
        check(tiny_model_dir, ["longmem_passkey"], pk_lengths="[60,4096]")
    check(tiny_model_dir, ["longmem_passkey"], pk_lengths="[60]")


def test_passkey_lengths_too_short_for_the_prompt_are_refused_before_the_model_loads(tiny_model_dir):
    """The task's own message (the prompt without filler, with that document's key), now at start-up."""
    with pytest.raises(
        TaskOptionError, match=r"longmem_passkey: length 10 is too short: the prompt without any filler"
    ):
        check(tiny_model_dir, ["longmem_passkey"], pk_lengths="[10,60]", pk_depths="[0,50]")
    check(tiny_model_dir, ["longmem_passkey"], pk_lengths="[10]", pk_protocol="chars")  # characters of filler


def test_the_answer_room_asked_in_gen_kwargs_counts(tiny_model_dir):
    with pytest.raises(TaskOptionError, match=r"answer needs 100, so the longest prompt is 28 tokens.*max_gen_toks"):
        check(tiny_model_dir, ["longmem_passkey"], {"max_gen_toks": 100}, pk_lengths="[60]")
    with pytest.raises(TaskOptionError, match=r"leave no room for a prompt in the 128 tokens"):
        check(tiny_model_dir, ["longmem_passkey"], {"max_gen_toks": 500}, pk_lengths="[60]")


def test_a_forgetting_curve_with_no_length_that_fits_is_refused(tiny_model_dir):
    with pytest.raises(TaskOptionError, match=r"none of the lengths \[100\] can run: they need up to 201"):
        check(tiny_model_dir, ["forgetting_curve"], max_length=64, fc_lengths="[100]")


def test_a_group_member_is_checked_with_the_groups_options(tiny_model_dir, monkeypatch):
    """The `longmem` group's passkey lengths do not fit a 128-token model (its datasets would be
    downloaded: the Hub counts as reachable)."""
    monkeypatch.setattr("lm_eval_longmem.common.hub.hub_reachable", lambda: True)
    with pytest.raises(TaskOptionError, match="longmem_passkey: length"):
        check(tiny_model_dir, ["longmem"])


def test_a_model_whose_config_is_not_here_is_left_to_the_task():
    """A Hub id: its config is not read at start-up (the task checks when it builds)."""
    preflight.check_inputs_fit(["longmem_passkey"], {"pretrained": "someorg/somemodel", "pk_lengths": "[4096]"}, {})


def digit_by_digit_tokenizer():
    """A real fast tokenizer that splits numbers into digits, as Llama's and SmolLM2's do."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(["<unk>", *"0123456789"])}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Digits(individual_digits=True)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")


def test_an_answer_room_shorter_than_a_key_is_refused():
    """max_gen_toks=4 would cut a 5-digit key to 4 digits and score every such answer wrong."""
    from lm_eval_longmem.tasks.passkey.protocol import check_answer_fits

    with pytest.raises(
        TaskOptionError, match=r"max_gen_toks=4 is shorter than a key: the longest \(50000\) is 5 tokens"
    ):
        check_answer_fits(digit_by_digit_tokenizer(), 4)
    check_answer_fits(digit_by_digit_tokenizer(), 5)


def test_the_answer_room_is_checked_at_start_up(tiny_model_dir, monkeypatch):
    seen = []
    monkeypatch.setattr(
        "lm_eval_longmem.tasks.passkey.protocol.check_answer_fits", lambda tokenizer, room: seen.append(room)
    )
    check(tiny_model_dir, ["longmem_passkey"], {"max_gen_toks": 7}, pk_lengths="[60]")
    assert seen == [7]
