"""Checks run before lm-eval loads a model or builds a task, so that a run that cannot work
offline fails in seconds with one message instead of after the model load (or a long wait on Hub
retries):

* `--model longmem --model_args pretrained=<hub id>` whose model is not in the Hugging Face
  cache while the Hub is unreachable;
* `pretrained=<folder>` (any model) missing its config, weights or tokenizer files, and a CLEX or
  Landmark checkpoint given to a model or method that would not run its mechanism;
* an unknown `method=` or a bad argument of the method (listing the valid ones), or an
  unknown `overlength=` policy;
* `--tasks` of ours (or the `longmem` group) whose datasets are missing: every missing one is
  listed at once, with the one command that fetches them all;
* lm-eval's own options with values its parser accepts but its run cannot use (`--limit nan`,
  `--batch_size 0`, `--tasks /no/such.yaml`, ...: run_options.py).

`install()` also fills in task metadata the embedded default model implies
(default_task_metadata.py). It wraps lm-eval's `run` subcommand (`lm_eval._cli.run.Run._execute`), which receives
the arguments lm-eval has already parsed; the start-up hook and `lm-eval-longmem` call it.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from lm_eval_longmem.harness.default_task_metadata import fill_default_tokenizer
from lm_eval_longmem.harness.run_arguments import MODEL_NAME, arguments_dict, task_names
from lm_eval_longmem.harness.task_extras import check_task_extras

_MARKER = "__lm_eval_longmem_preflight__"


def install(run_module=None) -> bool:
    """Run `check()` first in every `lm_eval run` of this process. Idempotent."""
    if run_module is None:
        import lm_eval._cli.run as run_module
    run = run_module.Run
    original = run.__dict__.get("_execute")
    function = getattr(original, "__func__", original)
    if function is None or getattr(function, _MARKER, False):
        return False

    @functools.wraps(function)
    def _execute(*args):
        from lm_eval_longmem.errors import exit_2_for_usage_errors

        def run():
            check(args[-1])  # a staticmethod today; the namespace is the last argument either way
            fill_default_tokenizer(args[-1])
            return function(*args)

        # a mistake in the command (here or later in the run, e.g. a misspelled task): one line, exit 2
        return exit_2_for_usage_errors(run)

    setattr(_execute, _MARKER, True)
    run._execute = staticmethod(_execute) if isinstance(original, staticmethod) else _execute
    return True


AUTO_DEVICE = "auto"  # longmem's models.longmem.AUTO_DEVICE (not imported here: it pulls in torch)


def check(args) -> None:
    """Raise our one-message error when the run needs what this offline machine lacks."""
    from lm_eval_longmem.common.hub import hub_reachable
    from lm_eval_longmem.harness import run_options

    run_options.check(args)  # lm-eval's own options (--limit, --batch_size, --tasks files, ...)
    model_args = arguments_dict(getattr(args, "model_args", None))
    ours = getattr(args, "model", None) == MODEL_NAME
    folder = local_config_folder(model_args["pretrained"]) if model_args.get("pretrained") is not None else None
    if folder is not None and not {"gguf_file", "subfolder"} & set(model_args):  # any model: named now
        from lm_eval_longmem.models.checkpoint.folder_contents import check_checkpoint_folder

        check_checkpoint_folder(folder, separate_tokenizer=model_args.get("tokenizer") is not None)
    if ours:
        from lm_eval_longmem.harness.live_by_length import parse_setting
        from lm_eval_longmem.models.runtime.overlength import parse_policy

        parse_policy(model_args.get("overlength"))  # an unknown policy: one line before anything loads
        parse_setting(model_args.get("by_length"))
        check_model_source(model_args.get("pretrained"))
        if getattr(args, "device", AUTO_DEVICE) is None:  # not typed: lm-eval would fill in cuda:0
            args.device = AUTO_DEVICE
    elif folder is not None:
        from lm_eval_longmem.models.method_registry.resolution import refuse_dropping_the_checkpoint_s_method

        refuse_dropping_the_checkpoint_s_method(model_args["pretrained"], f"--model {args.model}")  # CLEX, Landmark
    tasks = task_names(getattr(args, "tasks", None))
    if tasks:
        from lm_eval_longmem.tasks.dataset_needs import missing_for, needed

        options = {**model_args, **arguments_dict(getattr(args, "metadata", None))}
        check_task_options(tasks, options)
        check_task_extras(tasks)  # lm-eval's own tasks (RULER, LongBench, ...) and the packages they need
        if needed(tasks, options) and not hub_reachable():  # online, the tasks download what they need
            missing_for(tasks, options)
    if ours and set(model_args) - {"pretrained"}:  # last: the method classes import torch (slow)
        check_method_arguments(model_args)
    if tasks:
        check_inputs_fit(tasks, options, getattr(args, "gen_kwargs", None) or {})


def check_inputs_fit(tasks: list[str], options: dict, gen_kwargs: dict) -> None:
    """Inputs longer than the model takes (`pk_lengths=[4096]` on a 2,048-token model) fail now,
    not after the model loads: each task that declares an `inputs_check` is asked with the model's
    config and tokenizer (read from a local folder, no weights). Skipped for a Hub model and for
    the default model not yet converted; the task makes the same check when it builds."""
    from lm_eval_longmem.tasks import registry
    from lm_eval_longmem.tasks.declaration import import_object

    checks = []
    for requested in tasks:
        for task, group_metadata in registry.group_entries(requested) or [(requested, {})]:
            declaration = registry.find(task)
            if declaration is not None and declaration.inputs_check is not None:
                checks.append((declaration.inputs_check, {**group_metadata, **options}))
    tokenizer = options.get("tokenizer")
    local_tokenizer = tokenizer is None or local_config_folder(tokenizer) is not None
    if not checks or local_config_folder(options.get("pretrained")) is None or not local_tokenizer:
        return
    from lm_eval_longmem.tasks.model_view import model_view

    model = model_view(options)
    for check_inputs, task_options in checks:
        import_object(check_inputs)(task_options, model, gen_kwargs)


def check_task_options(tasks: list[str], options: dict) -> None:
    """Unknown, malformed or out-of-range `--metadata` options of the requested tasks (a bad
    choice or corpus name too) fail before the model loads, as the task would fail after it.

    Each task is checked with the options it will be built with: for a member of our group, the
    group's `metadata:` for it overridden by the command line's (lm-eval merges them so); our
    tasks' own YAMLs set no options. The options class is the one the task's declaration names,
    read without importing lm-eval's task code."""
    from lm_eval_longmem.tasks import registry
    from lm_eval_longmem.tasks.task_options import parse_task_options

    for requested in tasks:
        for task, group_metadata in registry.group_entries(requested) or [(requested, {})]:
            declaration = registry.find(task)
            if declaration is None or declaration.options is None:
                continue
            try:
                options_class = declaration.options.load()
            except ImportError:  # a task folder that is not there: lm-eval reports the task itself
                continue
            parse_task_options(options_class, {**group_metadata, **options}, declaration.options.prefix)


def check_method_arguments(model_args: dict) -> None:
    """An unknown method, a bad method argument, or a key nobody takes (`facter=2`, read against a
    local checkpoint's config) fails here, before lm-eval indexes its tasks; anything else (say, a
    `pretrained` path that is not there) is left for the model load to report as it always has."""
    from lm_eval_longmem.models.method_registry.model_arguments import check_config_arguments
    from lm_eval_longmem.models.method_registry.resolution import check_method_arguments as check

    check(model_args)
    check_config_arguments(model_args, local_config_folder(model_args.get("pretrained")))


def local_config_folder(pretrained: Any) -> str | None:
    """Where the model's config can be read without loading anything: a local folder, or the
    default model once converted; None otherwise (a Hub id, a model object)."""
    if pretrained is None:
        from lm_eval_longmem.models.checkpoint.default_model import default_model_target

        target = default_model_target()
        return str(target) if (target / "config.json").is_file() else None
    if isinstance(pretrained, (str, os.PathLike)) and os.path.isdir(os.path.expanduser(str(pretrained))):
        return os.path.expanduser(str(pretrained))
    return None


def check_model_source(pretrained: Any) -> None:
    """A local path that does not exist, or a Hub id with no trace in the local cache while the
    Hub is unreachable, is an error now."""
    from lm_eval_longmem.common.hub import (
        HubUnavailableError,
        hub_reachable,
        looks_like_hub_id,
        require_existing_path,
        uncached_model_message,
    )

    require_existing_path(pretrained)
    if not isinstance(pretrained, str) or not looks_like_hub_id(pretrained) or hub_reachable():
        return
    if not in_hub_cache(pretrained):
        raise HubUnavailableError(uncached_model_message(pretrained))


def in_hub_cache(repo_id: str) -> bool:
    """Whether the Hub cache holds anything of model `repo_id` (the loader decides the rest)."""
    from huggingface_hub.constants import HF_HUB_CACHE

    folder = os.path.join(HF_HUB_CACHE, "models--" + repo_id.replace("/", "--"))
    return os.path.isdir(os.path.join(folder, "snapshots"))
