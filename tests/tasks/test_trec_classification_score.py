"""LongBench's classification_score and first-line rule, on hand-checked cases (quirks included)."""

import ast
import importlib.util
import random
from pathlib import Path

import pytest

from lm_eval_longmem.data.trec import FINE_LABELS, LONGBENCH_ALL_CLASSES
from lm_eval_longmem.tasks.trec_manyshot.classification_score import classification_score, first_line, trec_score

CLASSES = LONGBENCH_ALL_CLASSES


def test_the_label_set_is_longbench_s_fifty_names_none_inside_another():
    assert len(CLASSES) == 50 and set(CLASSES) == set(FINE_LABELS)
    assert "Lasting time of somethin" in CLASSES and "Group or organization of person" in CLASSES
    assert not [(a, b) for a in CLASSES for b in CLASSES if a != b and a in b]


@pytest.mark.parametrize(
    "prediction, gold, expected",
    [
        (" Location", "Other location", 0.0),  # "Location" is no class name; "location" != "Location"
        (" Other location", "Other location", 1.0),
        ("City or Country", "City", 0.5),  # two classes named: half credit
        ("City, Country or State", "Country", 1 / 3),
        ("city", "City", 0.0),  # case-sensitive
        (" Lasting time of something", "Lasting time of somethin", 1.0),  # LongBench's typo still matches
        ("Individual", "Description of a person", 0.0),
        ("", "Food", 0.0),
    ],
)
def test_hand_checked_cases_with_the_real_classes(prediction, gold, expected):
    assert classification_score(prediction, gold, CLASSES) == pytest.approx(expected)


def test_matches_inside_the_gold_label_are_dropped():
    # "Other" is a proper substring of the gold "Other location": it does not dilute the score.
    assert classification_score("Other location", "Other location", ["Other", "Other location"]) == 1.0


def test_the_match_after_a_dropped_one_is_never_examined():
    # LongBench deletes from the list it iterates over. "Other" (index 0) is deleted, the list
    # shifts, and "location" (now index 0) is skipped: it stays and halves the score, although
    # it too is a proper substring of the gold label.
    classes = ["Other", "location", "Other location"]
    assert classification_score("Other location", "Other location", classes) == pytest.approx(0.5)
    # Here the skipped item is the gold label itself, which would stay anyway: both substrings go.
    assert classification_score("Other location", "Other location", ["Other", "Other location", "location"]) == 1.0
    # "Other" (index 1) is deleted, "location" slides into index 1 and is skipped.
    assert classification_score("Other location", "Other location", ["Other location", "Other", "location"]) == 0.5
    assert classification_score("Other location", "Other location", ["Other location", "location"]) == 1.0


def test_gold_not_named_scores_zero_even_if_substrings_match():
    assert classification_score("Other", "Other location", ["Other", "Other location"]) == 0.0


@pytest.mark.parametrize(
    "raw, line",
    [
        (" Food\nQuestion: What is ...", " Food"),
        ("\n\n Food\nQuestion", " Food"),  # leading newlines are dropped first
        ("  \n Food", "  "),  # but not other whitespace
        ("Food", "Food"),
    ],
)
def test_first_line_rule(raw, line):
    assert first_line(raw) == line


def test_trec_score_takes_the_first_line_and_the_best_gold():
    assert trec_score(" Animal\nQuestion: Who ...\nType: Individual", ["Animal"], CLASSES) == 1.0
    assert trec_score(" Food\nType: Animal", ["Animal"], CLASSES) == 0.0  # only the first line counts
    assert trec_score(" Food or Animal", ["Date", "Animal"], CLASSES) == 0.5


def lm_eval_longbench_reference():
    """lm-eval's copy of LongBench's classification_score, read from its source (the module
    itself needs jieba/rouge to import): an independent oracle for the quirks."""
    path = Path(importlib.util.find_spec("lm_eval").origin).parent / "tasks" / "longbench" / "metrics.py"
    tree = ast.parse(path.read_text())
    (function,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "classification_score"]
    namespace = {}
    exec(compile(ast.Module(body=[function], type_ignores=[]), str(path), "exec"), namespace)
    return namespace["classification_score"]


def test_agrees_with_longbench_s_own_function_on_random_cases():
    reference = lm_eval_longbench_reference()
    rng = random.Random(0)
    vocabulary = ["Other", "location", "Other location", "City", "State", "Country", "Food", "Oth", "cation"]
    for _ in range(3000):
        classes = rng.sample(vocabulary, rng.randint(1, len(vocabulary)))
        prediction = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 4)))
        gold = rng.choice(classes)
        assert classification_score(prediction, gold, classes) == reference(prediction, gold, all_classes=classes)
