"""Every place the plugin changes lm-eval 0.4.13, in one table, and the one verb that installs it.

lm-eval 0.4.13 has no plugin mechanism, so the plugin wraps a few of its functions. Each row of
``PATCHES`` names the attribute it changes (``module`` and ``attribute``), the function that
installs the change (``wrapper``, as ``"module:function"``), why, and the lm-eval module whose
loading it waits for (``after``). ``install(rows)`` is the one verb: the start-up hook
(startup.py) installs each module's rows right after lm-eval has executed that module, the
`lm-eval-longmem` pass-through does the same, and `lm_eval_longmem.register()` (the Python API)
installs the rows that are not ``cli_only`` at once.

Every wrapper is idempotent (it marks what it installed), and stands down on a target of another
shape or when lm-eval discovers plugins itself. ``parameters`` is the target's parameter list the
wrapper was written against; tests/harness/test_lm_eval_patches.py holds every row to the
installed lm-eval, so an lm-eval release that moves or reshapes a target fails there by name.

Wrappers are named by import strings, resolved only when installed: this module is imported by
the start-up hook in the lm-eval CLI before lm-eval loads, where importing the wrappers' modules
would add their imports to every start.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Patch:
    module: str  # the lm-eval module holding the attribute
    attribute: str  # dotted, from the module: "TaskManager.__init__"
    wrapper: str  # "module:function" that installs the change (idempotent, no arguments)
    why: str
    after: str = ""  # the lm-eval module whose loading triggers it; default ``module``
    parameters: tuple[str, ...] | None = None  # the target's parameters (None: not a function)
    cli_only: bool = False  # only for the `lm_eval` command line, not the Python API

    @property
    def trigger(self) -> str:
        return self.after or self.module

    def target(self):
        """lm-eval's attribute, as it is now in this process (wrapped or not)."""
        value = importlib.import_module(self.module)
        for name in self.attribute.split("."):
            value = getattr(value, name)
        return value

    def install_function(self):
        module, function = self.wrapper.split(":")
        return getattr(importlib.import_module(module), function)


_HARNESS = "lm_eval_longmem.harness"
EVALUATE_PARAMETERS = (  # lm_eval.evaluator.evaluate's, wrapped by two rows
    "lm",
    "task_dict",
    "limit",
    "samples",
    "cache_requests",
    "rewrite_requests_cache",
    "bootstrap_iters",
    "write_out",
    "log_samples",
    "system_instruction",
    "apply_chat_template",
    "fewshot_as_multiturn",
    "verbosity",
    "confirm_run_unsafe_code",
)

PATCHES = (
    Patch(
        "lm_eval.api.registry",
        "model_registry.register",
        f"{_HARNESS}.registration:install_model",
        "`--model longmem`, registered lazily after lm-eval's built-in models: lm-eval imports its "
        "model table only while the registry is empty, so registering earlier would hide them",
        after="lm_eval.models",
        parameters=("aliases", "target"),
    ),
    Patch(
        "lm_eval.tasks.manager",
        "TaskManager.__init__",
        f"{_HARNESS}.registration:install_task_folder",
        "every TaskManager (a run, `lm_eval ls tasks`, `validate`, the Python API) sees our task folder "
        "first, so a user's --include_path can still override a task of ours",
        parameters=("self", "verbosity", "include_path", "include_defaults", "metadata"),
    ),
    Patch(
        "lm_eval.tasks._index",
        "load_yaml",
        f"{_HARNESS}.task_index_cache:install",
        "the task indexer's parses of lm-eval's own ~14,000 task YAMLs served from a disk cache "
        "(task_index_cache.py), instead of re-parsed on every start",
        after="lm_eval.tasks.manager",
        parameters=("path", "resolve_func", "recursive", "_seen"),
    ),
    Patch(
        "lm_eval.tasks._index",
        "TaskIndex.build",
        f"{_HARNESS}.task_index_cache:install",
        "opens the cache for one index build and saves what it added (the same wrapper as load_yaml)",
        after="lm_eval.tasks.manager",
        parameters=("paths", "resolve_includes"),
    ),
    Patch(
        "lm_eval.loggers.evaluation_tracker",
        "GeneralConfigTracker.log_experiment_args",
        f"{_HARNESS}.registration:install_run_names",
        "results folders of `--model longmem` runs named after model and method (run_name.py); other "
        "models keep lm-eval's names",
        parameters=(
            "self",
            "model_source",
            "model_args",
            "system_instruction",
            "chat_template",
            "fewshot_as_multiturn",
        ),
    ),
    Patch(
        "lm_eval.loggers.utils",
        "get_git_commit_hash",
        f"{_HARNESS}.quiet:install_quiet_git_probe",
        "the same commit probe without git's 'fatal: not a git repository' outside a checkout (quiet.py); "
        "installed before lm-eval's evaluator binds the name, and replaced there too if it already has",
        parameters=(),
    ),
    Patch(
        "lm_eval._cli.run",
        "Run._execute",
        f"{_HARNESS}.preflight:install",
        "the start-up checks (preflight.py: malformed options, an uncached model or missing datasets "
        "offline) before lm-eval loads anything heavy; a usage mistake anywhere in the run is one line, exit 2",
        parameters=("args",),
        cli_only=True,
    ),
    Patch(
        "lm_eval._cli.utils",
        "MergeDictAction.__call__",
        f"{_HARNESS}.cli_mistakes:install_option_parsing",
        "a --metadata / --model_args value that is malformed JSON answered with one line, not a traceback "
        "from inside argparse (cli_mistakes.py)",
        after="lm_eval._cli.run",
        parameters=("self", "parser", "namespace", "values", "option_string"),
        cli_only=True,
    ),
    Patch(
        "lm_eval.evaluator_utils",
        "eval_logger",
        f"{_HARNESS}.quiet:install",
        "a filter on this logger drops the known-harmless 'Metrics were not scored on the same number of "
        "documents' paragraph for our tasks (quiet.py); the logger is found by name, the module not imported",
        after="lm_eval._cli.run",
    ),
    Patch(
        "lm_eval.config.evaluate_config",
        "EvaluatorConfig.process_tasks",
        f"{_HARNESS}.cli_mistakes:install_task_suggestions",
        "an unknown task name answered with the closest known ones in one line (cli_mistakes.py)",
        parameters=("self", "metadata"),
        cli_only=True,
    ),
    Patch(
        "lm_eval.evaluator",
        "evaluate",
        f"{_HARNESS}.empty_outputs:install",
        "generation tasks whose answers are mostly empty (an instruct model without its chat template) "
        "warned about with the count and likely cause, and counted in results['empty_generations'] "
        "(empty_outputs.py)",
        parameters=EVALUATE_PARAMETERS,
    ),
    Patch(
        "lm_eval.evaluator",
        "evaluate",
        f"{_HARNESS}.live_by_length:install",
        "a `--model longmem` run's scores by input-length bin, with bootstrap intervals, written into "
        "results[task] as `<metric>@len<lo>-<hi>` (live_by_length.py; `by_length=auto` keeps lm-eval's tasks' keys)",
        parameters=EVALUATE_PARAMETERS,
    ),
)


def install(rows=PATCHES) -> None:
    """Install ``rows`` in table order, each wrapper once (a wrapper may cover two rows)."""
    for wrapper in dict.fromkeys(row.wrapper for row in rows):
        next(row for row in rows if row.wrapper == wrapper).install_function()()


def triggered_by(module_name: str) -> tuple[Patch, ...]:
    """The rows the start-up hook installs once ``module_name`` has loaded."""
    return tuple(row for row in PATCHES if row.trigger == module_name)


def trigger_modules() -> tuple[str, ...]:
    """The lm-eval modules the start-up hook watches, in table order."""
    return tuple(dict.fromkeys(row.trigger for row in PATCHES))


def python_api_rows() -> tuple[Patch, ...]:
    """What `lm_eval_longmem.register()` installs: every row the command line alone does not need."""
    return tuple(row for row in PATCHES if not row.cli_only)
