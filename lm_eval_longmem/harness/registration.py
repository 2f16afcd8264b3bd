"""`longmem`, our task folder and our results-folder names in lm-eval 0.4.13: three rows of the
table of lm-eval patches (lm_eval_patches.py), and `register_all()`, the Python API's install.

Every install is idempotent, and stands down when lm-eval already knows our parts through its
own plugin discovery.
"""

from __future__ import annotations

import inspect
import logging
import sys
from pathlib import Path

from lm_eval_longmem.common.wrap_once import is_wrapped, wrap_once
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


def install_model() -> bool:
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


def install_task_folder(manager_module=None) -> bool:
    """Make every TaskManager (CLI run, `ls`, `validate`, Python API) see our task folder."""
    if manager_module is None:
        import lm_eval.tasks.manager as manager_module
    if lm_eval_loads_entry_points(manager_module):
        return False
    return wrap_once(manager_module.TaskManager, "__init__", _seeing_our_tasks, _WRAPPED_MARKER)


def _seeing_our_tasks(original_init):
    signature = inspect.signature(original_init)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        if bound.arguments.get("include_defaults", True):
            bound.arguments["include_path"] = _with_our_tasks(bound.arguments.get("include_path"))
        original_init(*bound.args, **bound.kwargs)

    return __init__


def install_run_names(tracker_module=None) -> bool:
    """Name the results folder of `--model longmem` runs after model and method (run_name.py).

    lm-eval names it in `GeneralConfigTracker.log_experiment_args` from `pretrained=` or a
    random id; we let it do so, then rename only when the model source is ours. Other models
    keep lm-eval's names. A name that cannot be made keeps lm-eval's, with a warning.
    """
    if tracker_module is None:
        import lm_eval.loggers.evaluation_tracker as tracker_module
    return wrap_once(tracker_module.GeneralConfigTracker, "log_experiment_args", _naming_our_runs, _WRAPPED_MARKER)


def _naming_our_runs(original):
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

    return log_experiment_args


def register_all() -> None:
    """What the Python API needs: every lm-eval patch the command line alone does not, and the
    model types transformers lacks."""
    from lm_eval_longmem.harness.lm_eval_patches import install, python_api_rows

    install(python_api_rows())
    from lm_eval_longmem.models.checkpoint.model_types import register_model_types

    register_model_types()  # FoX's and the Landmark study's, with transformers' Auto classes


def is_registered() -> bool:
    from lm_eval.api.registry import model_registry

    manager = sys.modules.get("lm_eval.tasks.manager")
    tasks_ok = manager is not None and is_wrapped(manager.TaskManager, "__init__", _WRAPPED_MARKER)
    tracker = sys.modules.get("lm_eval.loggers.evaluation_tracker")
    names_ok = tracker is not None and is_wrapped(tracker.GeneralConfigTracker, "log_experiment_args", _WRAPPED_MARKER)
    return MODEL_NAME in model_registry and tasks_ok and names_ok
