"""Known-harmless library messages that a run of our tasks would print, silenced one by one.

Each entry names the logger, the exact start of the message and why it is harmless for us;
anything else (other tasks, other messages, real warnings) passes through untouched.
`LM_EVAL_LONGMEM_DEBUG=1` keeps everything.

* lm-eval `evaluator_utils`: "[<our task>] Metrics were not scored on the same number of
  documents ...", for a task of our classes under its own name or one a YAML `include:`s it
  under. Our per-length / per-depth / per-shot metrics are, by design, each computed on the
  documents of its own bucket, so their counts differ. The warning is about size-weighted group
  aggregation, which the `longmem` group does not do (it has no `aggregate_metric_list`).
  Printed once per task of ours, every run, as a 10-line paragraph.
* git's "fatal: not a git repository" on every run outside a git checkout: lm-eval records the
  commit of the current directory with `git describe` and lets git's stderr through. The probe
  runs unchanged, its stderr discarded; the recorded hash is unchanged.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys

from lm_eval_longmem.errors import debugging

# (logger name, start of the message after "[task] "): dropped for our tasks only
HARMLESS = (("lm_eval.evaluator_utils", "Metrics were not scored on the same number of documents"),)


class _DropKnownHarmless(logging.Filter):
    """Drops "[<task>] <prefix>..." where the task is of one of our classes: declared under its own
    name, or built in this run under another (a YAML that `include:`s ours)."""

    def __init__(self, prefix: str):
        super().__init__()
        from lm_eval_longmem.tasks.registry import task_names  # our tasks, as their declarations name them

        self.prefix = prefix
        self.declared = set(task_names())

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001  (a broken record is not ours to judge)
            return True
        task, bracket, rest = message.partition("] ")
        if not (bracket and task.startswith("[") and rest.startswith(self.prefix)):
            return True
        from lm_eval_longmem.tasks.python_task import constructed_task_names

        return task[1:] not in self.declared | constructed_task_names


def install() -> None:
    """Add the filters (idempotent). Nothing is silenced while debugging."""
    if debugging():
        return
    for logger_name, prefix in HARMLESS:
        logger = logging.getLogger(logger_name)
        if not any(isinstance(f, _DropKnownHarmless) for f in logger.filters):
            logger.addFilter(_DropKnownHarmless(prefix))


def install_quiet_git_probe(module=None) -> None:
    """Replace lm-eval's `get_git_commit_hash` in `module` (lm_eval.loggers.utils, and the
    evaluator where it already holds the name) by the same probe with git's stderr discarded."""
    if module is None:
        import lm_eval.loggers.utils as module
    original = getattr(module, "get_git_commit_hash", None)
    if original is None or getattr(original, "__lm_eval_longmem__", False) or debugging():
        return

    def get_git_commit_hash():
        try:
            return subprocess.check_output(["git", "describe", "--always"], stderr=subprocess.DEVNULL).strip().decode()
        except (subprocess.CalledProcessError, FileNotFoundError, OSError):
            return module.get_commit_from_path(os.getcwd())  # lm-eval's own fallback, silent

    get_git_commit_hash.__lm_eval_longmem__ = True
    get_git_commit_hash.__wrapped__ = original
    module.get_git_commit_hash = get_git_commit_hash
    evaluator = sys.modules.get("lm_eval.evaluator")
    if evaluator is not None and getattr(evaluator, "get_git_commit_hash", None) is original:
        evaluator.get_git_commit_hash = get_git_commit_hash
