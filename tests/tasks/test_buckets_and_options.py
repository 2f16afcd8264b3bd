"""Shared task helpers: round-robin bucket order for --limit, sortable keys, prefixed options."""

import pytest

from lm_eval_longmem.tasks.buckets import bucket_tag, round_robin, tag_width
from lm_eval_longmem.tasks.forgetting_curve.task import ForgettingCurveTask
from lm_eval_longmem.tasks.task_options import TaskOptionError, convert


def test_round_robin_covers_every_bucket_first():
    assert round_robin([[1, 2, 3], ["a"], [10, 20]]) == [1, "a", 10, 2, 20, 3]
    assert round_robin([]) == [] and round_robin([[None, 0]]) == [None, 0]


def test_forgetting_curve_lists_lengths_round_robin(tiny_model_dir, corpus_file):
    metadata = {
        "pretrained": str(tiny_model_dir),
        "fc_corpus": str(corpus_file),
        "fc_lengths": [8, 16, 24],
        "fc_samples": 3,
    }
    docs = list(ForgettingCurveTask(config={"task": "forgetting_curve", "metadata": metadata}).test_docs())
    assert [d["length"] for d in docs[:3]] == [8, 16, 24] and [d["sample"] for d in docs[:3]] == [0, 0, 0]
    assert [(d["length"], d["sample"]) for d in docs[3:6]] == [(8, 1), (16, 1), (24, 1)]


def test_tags_sort_like_numbers():
    values = [1, 10, 1000, 75]
    width = tag_width(values, minimum=4)
    tags = [bucket_tag(v, width) for v in values]
    assert tags == ["0001", "0010", "1000", "0075"] and sorted(tags) == [bucket_tag(v, width) for v in sorted(values)]
    assert tag_width([12345], minimum=4) == 5


@pytest.mark.parametrize(
    "value, annotation, expected",
    [
        ("[10, 1, 10]", tuple[int, ...], (1, 10)),
        ([1, 10], tuple[int, ...] | None, (1, 10)),
        ("none", tuple[int, ...] | None, None),
        ("7", str | None, "7"),
        ("true", bool, True),
        (3.0, int, 3),
    ],
)
def test_conversions(value, annotation, expected):
    assert convert(value, annotation) == expected


def test_bad_values_are_errors():
    with pytest.raises(ValueError):
        convert(2.5, int)
    with pytest.raises(ValueError):
        convert(True, int)
    with pytest.raises(ValueError, match="quote it"):  # lm-eval read `007` as the number 7: the text is lost
        convert(7, str | None)
    assert issubclass(TaskOptionError, ValueError)


@pytest.mark.parametrize(
    "options_class, prefix, key, value",
    [
        ("forgetting_curve.protocol:Options", "fc_", "points", 10**12),
        ("forgetting_curve.protocol:Options", "fc_", "samples", 10**6),
        ("forgetting_curve.protocol:Options", "fc_", "max_length", 2**30),
        ("passkey.protocol:Options", "pk_", "lengths", [1024, 10**9]),
        ("passkey.protocol:Options", "pk_", "samples", 10**9),
        ("perplexity.protocol:Options", "ppl_", "windows", 10**7),
        ("perplexity.protocol:Options", "ppl_", "lengths", [10**10]),
        ("trec_manyshot.protocol:TrecOptions", "trec_", "questions", 10**9),
        ("forgetting_curve.protocol:Options", "fc_", "seed", 2**40),
    ],
)
def test_counts_and_lengths_have_upper_bounds_a_machine_can_run(options_class, prefix, key, value):
    """A slip such as fc_points=10**12 passed validation once and failed in a 7 TiB allocation
    after the model loaded; now it is one message, before anything loads."""
    import importlib

    from lm_eval_longmem.tasks.task_options import parse_task_options

    module, name = options_class.split(":")
    cls = getattr(importlib.import_module(f"lm_eval_longmem.tasks.{module}"), name)
    with pytest.raises(TaskOptionError, match=rf"--metadata {prefix}{key}=.* is out of range: expected .*between"):
        parse_task_options(cls, {prefix + key: value}, prefix)
