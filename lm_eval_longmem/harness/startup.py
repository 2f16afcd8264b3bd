"""Start-up shim: teaches the stock `lm_eval` command about `longmem` and our tasks.

It runs from `lm_eval_longmem_autoload.pth` (or the PEP 829 `.start` file on Python >=
3.15) in *every* Python process of the environment, so it imports nothing but `os` and
`sys` and returns at once unless the process is the lm-eval CLI. There it installs an
import watcher that registers our model right after `lm_eval.models` has registered the
built-in ones (registering earlier would hide them: lm-eval only imports its model table
when the registry is empty), wraps `TaskManager` once `lm_eval.tasks.manager` loads (our task
folder added; lm-eval's own task YAMLs served from a parse cache, task_index_cache.py), and
names `--model longmem` results folders after model and method once lm-eval's evaluation
tracker loads (run_name.py), and puts the start-up checks (preflight.py: malformed options,
uncached model or missing datasets offline), one-line answers to a misspelled task or a
malformed option string (cli_mistakes.py) and the known-harmless-message filters (quiet.py)
in front of `lm_eval run`, and counts empty generated answers (empty_outputs.py).

Set LM_EVAL_LONGMEM_AUTOLOAD=0 to switch it off.
"""

import os
import sys

OPT_OUT_ENV = "LM_EVAL_LONGMEM_AUTOLOAD"
_CLI_NAMES = ("lm_eval", "lm-eval")
_WATCHED = (
    "lm_eval.models",
    "lm_eval.tasks.manager",
    "lm_eval.loggers.evaluation_tracker",
    "lm_eval._cli.run",
    "lm_eval.config.evaluate_config",
    "lm_eval.loggers.utils",
    "lm_eval.evaluator",
)


def is_lm_eval_cli(argv) -> bool:
    """True when `argv` (an interpreter command line) runs the lm-eval CLI."""
    args = list(argv[1:4])
    for i, arg in enumerate(args):
        if arg == "-m":
            return i + 1 < len(args) and args[i + 1] in ("lm_eval", "lm_eval.__main__")
        if not arg.startswith("-"):
            name = os.path.basename(arg)
            if name.endswith(".py") or name.endswith(".exe"):
                name = name.rsplit(".", 1)[0]
            return name in _CLI_NAMES
    return False


def opted_out() -> bool:
    return os.environ.get(OPT_OUT_ENV, "1").strip().lower() in ("0", "false", "no", "off")


class _AfterImport:
    """Meta-path finder that runs a callback right after a watched module has executed."""

    def __init__(self, callbacks):
        self.callbacks = dict(callbacks)

    def find_spec(self, fullname, path=None, target=None):
        callback = self.callbacks.pop(fullname, None)
        if callback is None:
            return None
        if not self.callbacks and self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original_exec = loader.exec_module

        def exec_then_callback(module):
            original_exec(module)
            callback(module)

        # Per-module loader instance: shadow exec_module on it, keep everything else.
        loader.exec_module = exec_then_callback
        return spec


def _on_models_loaded(_module):
    from lm_eval_longmem.harness.registration import register_model

    register_model()


def _on_task_manager_loaded(module):
    from lm_eval_longmem.harness.registration import register_task_index_cache, register_tasks

    register_tasks(module)
    register_task_index_cache()


def _on_tracker_loaded(module):
    from lm_eval_longmem.harness.registration import register_run_names

    register_run_names(module)


def _on_loggers_utils_loaded(module):
    """Before lm-eval's evaluator binds `get_git_commit_hash` (quiet.py)."""
    from lm_eval_longmem.harness.registration import register_quiet_git_probe

    register_quiet_git_probe(module)


def _on_cli_run_loaded(module):
    """Offline checks (uncached model, missing datasets) before lm-eval loads anything heavy,
    a malformed option string as one line (cli_mistakes.py), and the known-harmless library
    messages of our tasks silenced (quiet.py)."""
    from lm_eval_longmem.harness import cli_mistakes, quiet
    from lm_eval_longmem.harness.preflight import install

    install(module)
    cli_mistakes.install_option_parsing()
    quiet.install()


def _on_evaluate_config_loaded(module):
    """An unknown task name answered with the closest known ones (cli_mistakes.py)."""
    from lm_eval_longmem.harness.cli_mistakes import install_task_suggestions

    install_task_suggestions(module)


def _on_evaluator_loaded(module):
    """Mostly-empty generations said in the log and recorded in the results (empty_outputs.py)."""
    from lm_eval_longmem.harness.registration import register_empty_output_check

    register_empty_output_check(module)


_CALLBACKS = dict(
    zip(
        _WATCHED,
        (
            _on_models_loaded,
            _on_task_manager_loaded,
            _on_tracker_loaded,
            _on_cli_run_loaded,
            _on_evaluate_config_loaded,
            _on_loggers_utils_loaded,
            _on_evaluator_loaded,
        ),
    )
)


def activate(argv=None) -> bool:
    """Install the import watcher when this process is the lm-eval CLI. Idempotent."""
    if opted_out():
        return False
    if not is_lm_eval_cli(argv if argv is not None else getattr(sys, "orig_argv", sys.argv)):
        return False
    from lm_eval_longmem.errors import install_concise_excepthook  # os and sys only

    install_concise_excepthook()  # our errors print as one message, not a traceback
    watch_lm_eval()
    return True


def watch_lm_eval() -> None:
    """Hook our callbacks onto lm-eval's modules (now if already imported, else when they
    load). Also used by `lm-eval-longmem`'s pass-through, which works even with the hook off."""
    if any(isinstance(f, _AfterImport) for f in sys.meta_path):
        return
    callbacks = {}
    for name, callback in _CALLBACKS.items():
        if name in sys.modules:
            callback(sys.modules[name])
        else:
            callbacks[name] = callback
    if callbacks:
        sys.meta_path.insert(0, _AfterImport(callbacks))
