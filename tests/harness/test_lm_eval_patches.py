"""The table of lm-eval patches against the installed lm-eval: one test per row fails, naming the
row, when lm-eval moves or reshapes what the row's wrapper was written against."""

from __future__ import annotations

import inspect
import logging

import pytest

from lm_eval_longmem.harness import lm_eval_patches, quiet
from lm_eval_longmem.harness.lm_eval_patches import PATCHES


@pytest.mark.parametrize("row", PATCHES, ids=lambda row: f"{row.module}:{row.attribute}")
def test_lm_eval_still_has_the_shape_the_row_wraps(row):
    target = row.target()  # fails with AttributeError / ImportError when the target moved
    if row.parameters is None:
        assert isinstance(target, logging.Logger) and target.name == row.module
        assert target.name in {name for name, _ in quiet.HARMLESS}  # the logger quiet.py filters
    else:
        # inspect.signature follows __wrapped__: lm-eval's own parameters even once a wrapper is in
        assert tuple(inspect.signature(target).parameters) == row.parameters
    assert callable(row.install_function())
    assert row.why and row.trigger.startswith("lm_eval")


def test_each_trigger_module_is_watched_once_in_table_order():
    triggers = lm_eval_patches.trigger_modules()
    assert len(set(triggers)) == len(triggers)
    assert {row.trigger for row in PATCHES} == set(triggers)
    assert triggers[0] == "lm_eval.models"  # our model after lm-eval's built-ins


def test_the_python_api_leaves_the_command_line_rows_out():
    api = lm_eval_patches.python_api_rows()
    assert all(not row.cli_only for row in api)
    assert {row.attribute for row in PATCHES if row.cli_only} == {
        "Run._execute",
        "MergeDictAction.__call__",
        "EvaluatorConfig.process_tasks",
    }


def test_install_calls_a_wrapper_shared_by_two_rows_once(monkeypatch):
    calls = []
    monkeypatch.setattr(lm_eval_patches.Patch, "install_function", lambda row: lambda: calls.append(row.wrapper))
    lm_eval_patches.install(lm_eval_patches.triggered_by("lm_eval.tasks.manager"))
    assert calls == [
        "lm_eval_longmem.harness.registration:install_task_folder",
        "lm_eval_longmem.harness.task_index_cache:install",
    ]
