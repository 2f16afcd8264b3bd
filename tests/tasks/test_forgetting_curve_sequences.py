"""The paper's sequences and scored positions, on hand-computed cases."""

import numpy as np
import pytest

from lm_eval_longmem.tasks.forgetting_curve.sequences import (
    copy_sequence,
    input_tokens,
    lm_sequence,
    num_scored,
    sample_spans,
    scored_range,
)

BOS, EOS = 1, 2
S = [10, 11, 12, 13, 14]
I = [20, 21, 22, 23, 24]  # noqa: E741 (the paper's notation: I, the irrelevant text beside S)


def test_copy_sequence_is_bos_s_bos_s_eos():
    assert copy_sequence(S, BOS, EOS) == [1, 10, 11, 12, 13, 14, 1, 10, 11, 12, 13, 14, 2]


def test_lm_sequence_replaces_the_first_copy_with_irrelevant_text():
    assert lm_sequence(I, S, BOS, EOS) == [1, 20, 21, 22, 23, 24, 1, 10, 11, 12, 13, 14, 2]


def test_lm_sequence_needs_equal_lengths():
    with pytest.raises(ValueError):
        lm_sequence(I[:4], S, BOS, EOS)


@pytest.mark.parametrize("length, expected", [(1, 1), (2, 1), (5, 3), (8, 4), (4095, 2048)])
def test_scores_the_last_ceil_half(length, expected):
    assert num_scored(length) == expected
    # the reference code's slice: src[-length//2:] on the L target tokens
    assert len(list(range(length))[-length // 2 :]) == expected


def test_scored_positions_for_length_5():
    start, end = scored_range(5)
    assert (start, end) == (9, 12)
    seq = copy_sequence(S, BOS, EOS)
    assert seq[start:end] == [12, 13, 14]  # the last 3 tokens of the second S
    assert lm_sequence(I, S, BOS, EOS)[start:end] == [12, 13, 14]


def test_scored_positions_for_even_length():
    target = [5, 6, 7, 8]
    start, end = scored_range(4)
    assert copy_sequence(target, BOS, EOS)[start:end] == [7, 8]


def test_model_input_is_2l_plus_1_tokens():
    # [bos] S [bos] S[:-1]: the last target token and [eos] are never inputs to a scored prediction
    assert input_tokens(5) == 11
    assert input_tokens(5) == len(copy_sequence(S, BOS, EOS)) - 2


def test_spans_are_in_bounds_and_do_not_overlap():
    rng = np.random.default_rng(0)
    for length in (1, 7, 50, 250):
        for target, irrelevant in sample_spans(1000, length, 200, rng):
            assert 0 <= target <= 1000 - length and 0 <= irrelevant <= 1000 - length
            assert irrelevant + length <= target or target + length <= irrelevant


def test_irrelevant_start_covers_both_sides():
    rng = np.random.default_rng(1)
    sides = {irr < tgt for tgt, irr in sample_spans(400, 20, 500, rng)}
    assert sides == {True, False}


def test_spans_are_deterministic_for_a_seed():
    a = sample_spans(10_000, 64, 10, np.random.default_rng([0, 64]))
    b = sample_spans(10_000, 64, 10, np.random.default_rng([0, 64]))
    c = sample_spans(10_000, 64, 10, np.random.default_rng([1, 64]))
    assert a == b and a != c


def test_corpus_must_be_long_enough():
    with pytest.raises(ValueError, match="needs at least"):
        sample_spans(100, 30, 1, np.random.default_rng(0))
