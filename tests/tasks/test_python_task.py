"""The shared base of our Python tasks (lm_eval_longmem/tasks/python_task.py)."""

from __future__ import annotations

import logging

from lm_eval_longmem.tasks.python_task import LongMemTask


def test_an_ignored_chat_template_is_said_once_per_task_not_per_document(caplog):
    """`--apply_chat_template` on forgetting_curve printed its notice once per document."""

    class PromptFreeTask:
        TASK_NAME = "forgetting_curve"

    task = PromptFreeTask()
    with caplog.at_level(logging.WARNING):
        for _ in range(3):  # three documents' requests
            kwargs = {"apply_chat_template": True, "chat_template": "{{ messages }}", "metadata": {"k": 1}}
            LongMemTask.drop_chat_template(task, kwargs, "the paper's test is prompt-free.")
            assert kwargs == {"metadata": {"k": 1}}  # lm-eval's Instance never sees the template arguments
    assert caplog.text.count("forgetting_curve ignores --apply_chat_template") == 1
