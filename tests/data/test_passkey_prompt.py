"""Passkey format, depth placement, sizing and first-integer scoring on hand-made cases."""

import pytest

from lm_eval_longmem.data.passkey_prompt import (
    FILLER,
    QUESTION,
    TASK_LINE,
    assemble,
    filler_characters,
    filler_sentences,
    key_line,
    prompt_for_characters,
    split_at_depth,
)
from lm_eval_longmem.tasks.passkey.protocol import (
    ANSWER_TOKENS,
    Options,
    PasskeyConfigError,
    check_lengths_fit,
    prompt_for_tokens,
)
from lm_eval_longmem.tasks.passkey.scoring import first_integer, is_correct


def words(text: str) -> int:
    """A stand-in tokenizer for sizing tests: one token per whitespace-separated word."""
    return len(text.split())


def test_the_landmark_attention_strings():
    assert TASK_LINE == (
        "There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. "
        "I will quiz you about the important information there."
    )
    assert FILLER == "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
    assert key_line(9054) == "The pass key is 9054. Remember it. 9054 is the pass key."
    assert QUESTION == "What is the pass key? The pass key is"


def test_assembled_prompt_is_exact():
    assert assemble("The grass is green.", 42, "The grass is green. The sky is blue.") == (
        "There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. "
        "I will quiz you about the important information there.\n"
        "The grass is green.\n"
        "The pass key is 42. Remember it. 42 is the pass key.\n"
        "The grass is green. The sky is blue.\n"
        "What is the pass key? The pass key is"
    )


def test_character_filler_is_the_originals():
    original = " ".join([FILLER] * 2000)  # landmark attention's garbage_inf
    for n in (0, 1, 5, len(FILLER), len(FILLER) + 1, 1000, 12345):
        assert filler_characters(n) == original[:n]


def test_character_protocol_prompt_is_the_originals():
    original = " ".join([FILLER] * 2000)
    n, depth, key = 1000, 25, 777
    expected = "\n".join([TASK_LINE, original[:250], key_line(key), original[:750], QUESTION])
    assert prompt_for_characters(n, depth, key) == expected


def test_sentence_filler_cycles_the_filler():
    assert filler_sentences(0) == ""
    assert filler_sentences(2) == "The grass is green. The sky is blue."
    assert filler_sentences(7) == FILLER + " The grass is green. The sky is blue."


@pytest.mark.parametrize(
    ("total", "depth", "split"), [(10, 0, (0, 10)), (10, 100, (10, 0)), (10, 50, (5, 5)), (7, 25, (1, 6))]
)
def test_depth_split(total, depth, split):
    assert split_at_depth(total, depth) == split


def test_token_sizing_takes_the_most_filler_that_fits():
    length = 200
    prompt, tokens = prompt_for_tokens(length, 50, 31337, words)
    assert tokens == words(prompt) <= length
    lines = prompt.split("\n")
    before, after = lines[1], lines[3]
    sentences = before.count(".") + after.count(".")
    assert before.count(".") == int(sentences * 50 / 100)
    more_before, more_after = split_at_depth(sentences + 1, 50)
    one_more = assemble(filler_sentences(more_before), 31337, filler_sentences(more_after))
    assert words(one_more) > length


def test_depth_zero_and_hundred_put_the_key_at_the_ends():
    first, _ = prompt_for_tokens(150, 0, 5, words)
    last, _ = prompt_for_tokens(150, 100, 5, words)
    assert first.startswith(TASK_LINE + "\n\n" + key_line(5) + "\nThe grass is green.")
    assert last.endswith(".\n" + key_line(5) + "\n\n" + QUESTION)
    assert last.split("\n")[1].startswith("The grass is green. The sky is blue.")


def test_a_length_below_the_bare_prompt_is_an_error():
    with pytest.raises(PasskeyConfigError, match="too short"):
        prompt_for_tokens(10, 50, 1, words)


def test_lengths_must_leave_room_for_the_answer():
    check_lengths_fit(Options(lengths=(118,)), 128)
    with pytest.raises(
        PasskeyConfigError,
        match=rf"\[119, 200\].*answer needs {ANSWER_TOKENS}.*longest prompt is 118.*Nothing is truncated",
    ):
        check_lengths_fit(Options(lengths=(64, 119, 200)), 128)


def test_options_from_metadata():
    options = Options.from_metadata(
        {"pk_lengths": "[2048,1024]", "pk_depths": [50, 0], "pk_samples": "3", "fc_points": 4, "pretrained": "x"}
    )
    assert options.lengths == (1024, 2048) and options.depths == (0, 50) and options.samples == 3
    assert Options.from_metadata({}) == Options()
    assert Options().lengths == (512, 1024, 2048) and Options().depths == (0, 25, 50, 75, 100)


@pytest.mark.parametrize(
    "bad", [{"pk_depths": [120]}, {"pk_protocol": "words"}, {"pk_samples": 0}, {"pk_lengths": [1.5]}]
)
def test_malformed_options_are_rejected(bad):
    with pytest.raises(PasskeyConfigError):
        Options.from_metadata(bad)


def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(
        PasskeyConfigError, match="pk_length; valid: pk_depths, pk_lengths, pk_protocol, pk_samples, pk_seed"
    ):
        Options.from_metadata({"pk_length": 10})


@pytest.mark.parametrize(
    ("generated", "first"),
    [
        (" 123.", 123),
        ("The pass key is 123.", 123),
        ("12a3", 12),
        ("abc", None),
        ("", None),
        (" 0042 is", 42),
        ("-5 then 7", 5),
        (" 3.14", 3),
    ],
)
def test_first_integer(generated, first):
    assert first_integer(generated) == first


def test_correct_iff_the_first_integer_is_the_key():
    assert is_correct(" 31337. Remember it.", 31337)
    assert not is_correct(" 1 31337", 31337)  # only the first integer counts
    assert not is_correct(" three", 3)
    assert is_correct("31337", "31337")
