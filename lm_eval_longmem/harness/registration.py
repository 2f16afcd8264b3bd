"""Registration of `longmem` and our task folder with lm-eval 0.4.13.

Used by the start-up hook (for the `lm_eval` CLI), the `lm-eval-longmem` console script
and `lm_eval_longmem.register()` (Python API). Every function is idempotent, and each
stands down when lm-eval already knows our parts through its own plugin discovery.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
from pathlib import Path

from lm_eval_longmem.harness.run_arguments import MODEL_NAME

logger = logging.getLogger(__name__)

MODEL_TARGET = "lm_eval_longmem.lm_eval_model.longmem:LongMemLM"
ENTRY_POINT_GROUPS = ("lm_eval.models", "lm_eval.tasks")
_WRAPPED_MARKER = "__lm_eval_longmem_wrapped__"


def tasks_dir() -> Path:
    from lm_eval_longmem.tasks import TASKS_DIR

    return Path(TASKS_DIR)


def lm_eval_loads_entry_points(module) -> bool:
    """Whether an lm-eval module discovers plugins itself (newer lm-eval releases).

    lm-eval 0.4.13 has no plugin mechanism; the releases that add one read the
    `lm_eval.models` / `lm_eval.tasks` entry-point groups, which this package declares.
    We look for that in the module's own source rather than guessing version numbers.
    """
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return False
    return "entry_points" in source and any(group in source for group in ENTRY_POINT_GROUPS)


def register_model() -> bool:
    """Register `longmem` lazily, after lm-eval's built-in models. Returns True if added."""
    import lm_eval.api.registry as registry_module
    import lm_eval.models  # noqa: F401  (fills the registry with the built-ins first)

    model_registry = registry_module.model_registry
    if lm_eval_loads_entry_points(registry_module) or MODEL_NAME in model_registry:
        return False  # already ours (idempotence) or loaded natively by lm-eval
    model_registry.register(MODEL_NAME, target=MODEL_TARGET)
    return True


def _with_our_tasks(include_path):
    ours = tasks_dir()
    if include_path is None:
        paths = []
    elif isinstance(include_path, (list, tuple)):
        paths = list(include_path)
    else:
        paths = [include_path]
    if any(Path(p).resolve() == ours for p in paths):
        return include_path
    # Ours first, so a user's --include_path can still override a task of ours.
    return [ours, *paths]


def register_tasks(manager_module=None) -> bool:
    """Make every TaskManager (CLI run, `ls`, `validate`, Python API) see our task folder."""
    if manager_module is None:
        import lm_eval.tasks.manager as manager_module
    if lm_eval_loads_entry_points(manager_module):
        return False
    task_manager = manager_module.TaskManager
    original_init = task_manager.__init__
    if getattr(original_init, _WRAPPED_MARKER, False):
        return False
    signature = inspect.signature(original_init)

    @functools.wraps(original_init)
    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        if bound.arguments.get("include_defaults", True):
            bound.arguments["include_path"] = _with_our_tasks(bound.arguments.get("include_path"))
        original_init(*bound.args, **bound.kwargs)

    setattr(__init__, _WRAPPED_MARKER, True)
    task_manager.__init__ = __init__
    return True


def register_run_names(tracker_module=None) -> bool:
    """Name the results folder of `--model longmem` runs after model and method (run_name.py).

    lm-eval names it in `GeneralConfigTracker.log_experiment_args` from `pretrained=` or a
    random id; we let it do so, then rename only when the model source is ours. Other models
    keep lm-eval's names. A name that cannot be made keeps lm-eval's, with a warning.
    """
    if tracker_module is None:
        import lm_eval.loggers.evaluation_tracker as tracker_module
    tracker = tracker_module.GeneralConfigTracker
    original = tracker.log_experiment_args
    if getattr(original, _WRAPPED_MARKER, False):
        return False

    @functools.wraps(original)
    def log_experiment_args(self, model_source, model_args, *args, **kwargs):
        original(self, model_source, model_args, *args, **kwargs)
        if model_source != MODEL_NAME:
            return
        from lm_eval_longmem.harness.run_name import run_folder_name

        try:
            name = run_folder_name(model_args)
        except Exception as err:  # noqa: BLE001  (naming must never stop a finished run)
            logger.warning(
                "Could not name the results folder after the method (%s); using %s.", err, self.model_name_sanitized
            )
            return
        self.model_name = self.model_name_sanitized = name

    setattr(log_experiment_args, _WRAPPED_MARKER, True)
    tracker.log_experiment_args = log_experiment_args
    return True


def register_task_index_cache() -> bool:
    """lm-eval's built-in task YAMLs parsed once per install, not on every start (task_index_cache.py)."""
    from lm_eval_longmem.harness.task_index_cache import install

    return install()


def register_quiet_git_probe(utils_module=None) -> None:
    """lm-eval's commit probe without git's "fatal: not a git repository" (quiet.py); also
    replaced in the evaluator if it has already bound the name."""
    from lm_eval_longmem.harness import quiet

    if utils_module is None:
        import lm_eval.loggers.utils as utils_module
    quiet.quiet_git_probe(utils_module)


def register_empty_output_check(evaluator_module=None) -> bool:
    """Mostly-empty generated answers warned about and counted in the results (empty_outputs.py)."""
    from lm_eval_longmem.harness import empty_outputs

    return empty_outputs.install(evaluator_module)


def register_log_filters() -> None:
    """The Python API drops the same known-harmless messages as the CLI (quiet.py)."""
    from lm_eval_longmem.harness import quiet

    quiet.install()


def register_all() -> None:
    register_model()
    register_tasks()
    register_task_index_cache()
    register_run_names()
    register_quiet_git_probe()
    register_log_filters()
    register_empty_output_check()
    from lm_eval_longmem.models.checkpoint.model_types import register_model_types

    register_model_types()  # FoX's and the Landmark study's, with transformers' Auto classes


def is_registered() -> bool:
    from lm_eval.api.registry import model_registry

    manager = sys.modules.get("lm_eval.tasks.manager")
    tasks_ok = manager is not None and getattr(manager.TaskManager.__init__, _WRAPPED_MARKER, False)
    tracker = sys.modules.get("lm_eval.loggers.evaluation_tracker")
    names_ok = tracker is not None and getattr(tracker.GeneralConfigTracker.log_experiment_args, _WRAPPED_MARKER, False)
    return MODEL_NAME in model_registry and bool(tasks_ok) and bool(names_ok)
