"""Two common command-line mistakes that lm-eval 0.4.13 answers with a traceback, answered with
one line (exit status 2, as argparse answers its own) through the start-up hook and
`lm-eval-longmem`:

* a task name it cannot find (`ValueError: Tasks not found: forgeting_curve`, 17 lines): the
  closest known names ("did you mean") and where the full list is;
* a `--metadata` / `--model_args` value that starts like JSON but is not JSON (`ValueError:
  Invalid JSON: ...` raised from inside argparse, 42 lines): lm-eval's own message, as
  argparse would print it.

Both apply to every `lm_eval run` that the hook reaches, whatever the model: a misspelled task
deserves a suggestion in any case. Only the failure path changes. A command lm-eval accepts runs
exactly as lm-eval alone runs it, and a failure these wrappers cannot explain (a task lm-eval
does know, a YAML path) is re-raised untouched.
"""

from __future__ import annotations

from lm_eval_longmem.common.wrap_once import wrap_once

_MARKER = "__lm_eval_longmem_cli_mistakes__"
LIST_COMMAND = "lm_eval ls tasks"


def install_option_parsing(cli_utils_module=None) -> bool:
    """A malformed JSON value of a key=value option (`--metadata '{"fc_samples": 3'`, or `[[[...` nested
    past Python's recursion limit) is one line."""
    if cli_utils_module is None:
        import lm_eval._cli.utils as cli_utils_module
    action = getattr(cli_utils_module, "MergeDictAction", None)
    if action is None:
        return False
    return wrap_once(action, "__call__", _parsing_in_one_line, _MARKER)


def _parsing_in_one_line(original):
    def __call__(self, parser, namespace, values, option_string=None):
        try:
            return original(self, parser, namespace, values, option_string)
        except (ValueError, RecursionError) as err:  # lm-eval's own `key=value` mistakes go through parser.error
            from lm_eval_longmem.errors import UsageError, exit_for_usage_error

            reason = "lists or mappings nested too deeply to read" if isinstance(err, RecursionError) else err
            exit_for_usage_error(UsageError(f"argument {option_string or self.dest}: {reason}"), parser.prog)

    return __call__


def install_task_suggestions(evaluate_config_module=None) -> bool:
    """`EvaluatorConfig.process_tasks` raises our one-line `UsageError` for unknown task names."""
    if evaluate_config_module is None:
        import lm_eval.config.evaluate_config as evaluate_config_module
    config_class = evaluate_config_module.EvaluatorConfig
    if "process_tasks" not in config_class.__dict__:  # only the class's own method, not an inherited one
        return False
    return wrap_once(config_class, "process_tasks", _suggesting_task_names, _MARKER)


def _suggesting_task_names(original):
    def process_tasks(self, *args, **kwargs):
        try:
            return original(self, *args, **kwargs)
        except ValueError as err:
            message = unknown_tasks_message(self.tasks, self.include_path, self.model)
            if message is None:
                raise
            from lm_eval_longmem.errors import UsageError

            raise UsageError(message) from err

    return process_tasks


def requested_names(tasks) -> list[str]:
    """`--tasks` as lm-eval splits it (a comma-separated string or a list of them)."""
    items = [tasks] if isinstance(tasks, str) else list(tasks or [])
    return [name.strip() for item in items if isinstance(item, str) for name in item.split(",") if name.strip()]


def unknown_tasks_message(tasks, include_path=None, model: str | None = None) -> str | None:
    """One line naming each requested task lm-eval does not know, with the closest known names;
    None when every name is known (the failure was something else: a YAML path, ...)."""
    from lm_eval.tasks import TaskManager

    from lm_eval_longmem.common.suggestions import close_matches, did_you_mean, either

    manager = TaskManager(include_path=include_path)
    unknown = [
        name for name in requested_names(tasks) if not name.endswith(".yaml") and not manager.match_tasks([name])
    ]
    if not unknown:
        return None
    known = manager.all_tasks
    if len(unknown) == 1:
        message = f"Unknown task '{unknown[0]}'.{did_you_mean(unknown[0], known)}"
    else:
        described = []
        for name in unknown:
            matches = close_matches(name, known)
            described.append(f"'{name}'" + (f" (did you mean {either(matches)}?)" if matches else ""))
        message = f"Unknown tasks {either(described, 'and')}."
    message += f" `{LIST_COMMAND}` lists all {len(known)} tasks, groups and tags"
    ours = plugin_task_names(manager)
    if model == "longmem" and ours:
        message += f"; this plugin's: {', '.join(ours)}"
    return message + "."


def plugin_task_names(manager) -> list[str]:
    """The tasks and groups of our task folder, as `manager` indexed them."""
    from lm_eval_longmem.harness.registration import tasks_dir

    ours = tasks_dir()
    names = []
    for name, entry in manager.task_index.items():
        path = getattr(entry, "yaml_path", None)
        if path is not None and ours in [*getattr(path, "parents", ())]:
            names.append(name)
    return sorted(names)
