"""lm-eval's own tasks whose extra is not installed: one line at start-up (harness/task_extras.py)."""

from __future__ import annotations

import argparse

import pytest

from lm_eval_longmem.harness import preflight, task_extras


@pytest.fixture
def without_wonderwords(monkeypatch):
    monkeypatch.setattr(task_extras, "_installed", lambda distribution: distribution != "wonderwords")


def test_lm_evals_task_extras_are_read_from_its_own_metadata():
    extras = task_extras.task_extras()
    assert {"nltk", "wonderwords"} <= set(extras["ruler"]) and "jieba" in extras["longbench"]
    assert {"ruler_vt", "niah_single_1", "ruler"} <= task_extras.builtin_names("ruler")


@pytest.mark.parametrize("task", ["ruler_vt", "niah_single_1", "ruler"])
def test_a_ruler_task_without_wonderwords_is_one_line_before_anything_loads(task, without_wonderwords):
    """It was lm-eval's ImportError traceback after its task index."""
    args = argparse.Namespace(model="longmem", model_args={}, tasks=[task], metadata=None)
    with pytest.raises(task_extras.MissingTaskPackageError) as raised:
        preflight.check(args)
    assert str(raised.value) == (
        f"lm-eval's task {task} needs wonderwords (the lm_eval[ruler] extra), which is not installed: "
        'pip install "lm_eval[ruler]"'
    )


def test_tasks_of_other_folders_are_not_touched(without_wonderwords):
    # a local copy of ruler_vt without the NIAH part (tests/e2e/test_past_context_and_ruler.py) needs no extra
    task_extras.check_task_extras(["ruler_vt_local", "hellaswag", "forgetting_curve"])
