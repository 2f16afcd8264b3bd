"""From a `SweepConfig` to the list of lm_eval runs, each with its folder and command line,
and whether a run is already done (read from the results files lm-eval wrote).

A run is done when its folder holds a results file whose recorded config matches it: model
`longmem`, the same `model_args` (as lm-eval parsed them), the same `--limit`, every task of the
run among the results, and the sweep's `--metadata` in every task's recorded metadata. So an
interrupted sweep resumes where it stopped, and a changed setting runs again.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from lm_eval_longmem.harness.run_name import run_folder_name
from lm_eval_longmem.sweep.config import SweepConfig

MODEL = "longmem"


@dataclasses.dataclass(frozen=True)
class Run:
    name: str  # results folder under the output path (run_name.run_folder_name)
    model_args: dict[str, Any]
    tasks: tuple[str, ...]
    metadata: dict[str, Any]
    limit: float | None
    output_path: Path

    @property
    def folder(self) -> Path:
        return self.output_path / self.name

    @property
    def label(self) -> str:
        return f"{self.name} [{','.join(self.tasks)}]"


def plan_runs(config: SweepConfig) -> list[Run]:
    """Every run of the grid, in order (models, then methods, then settings, then tasks).

    Names are made by the wrapper's own argument parsing, so an unknown method or a bad
    method argument stops the sweep here, before anything runs.
    """
    task_sets = [(task,) for task in config.tasks] if config.per_task else [tuple(config.tasks)]
    runs, seen = [], set()
    for model in config.models:
        for method in config.methods:
            for setting in method.settings:
                model_args = {**model, **config.model_args, "method": method.name, **setting}
                name = run_folder_name(model_args)
                for tasks in task_sets:
                    key = (name, tasks, _canonical(model_args))
                    if key in seen:
                        continue
                    seen.add(key)
                    runs.append(
                        Run(name, model_args, tasks, dict(config.metadata), config.limit, Path(config.output_path))
                    )
    return runs


# How the sweep spells the lm_eval options that may not repeat inside model_args.
SWEEP_OPTIONS = {"device": "--device", "batch_size": "--batch-size"}


def check_runs(runs: list[Run], config: SweepConfig) -> None:
    """What each run's `lm_eval` checks at start-up, checked once for the whole sweep (the dry run
    too): each model's source (`--models /no/such`, a checkpoint folder missing a file, a Hub
    model uncached offline), the `model_args` lm_eval cannot take (`device=`, a dtype torch lacks),
    every method's arguments, keys nobody takes included (`clex:max_factr=4`), read against the
    model's local config, and the task names (`longmem_pasky`, with lm-eval's closest ones)."""
    from types import SimpleNamespace

    from lm_eval_longmem.errors import UsageError
    from lm_eval_longmem.harness import run_options
    from lm_eval_longmem.harness.cli_mistakes import unknown_tasks_message
    from lm_eval_longmem.harness.lm_eval_patches import install, triggered_by
    from lm_eval_longmem.harness.preflight import check_method_arguments, check_model_source, local_config_folder

    run_options.check_device(MODEL, config.device)
    seen = set()
    for run in runs:
        key = _canonical(run.model_args)
        if key not in seen:
            seen.add(key)
            pretrained = run.model_args.get("pretrained")
            check_model_source(pretrained)
            folder = local_config_folder(pretrained) if pretrained is not None else None
            if folder is not None:
                from lm_eval_longmem.models.checkpoint.folder_contents import check_checkpoint_folder

                check_checkpoint_folder(folder, separate_tokenizer=run.model_args.get("tokenizer") is not None)
            args = SimpleNamespace(model=MODEL, model_args=run.model_args, max_batch_size=None)
            run_options.check_model_args(args, SWEEP_OPTIONS)
            check_method_arguments(run.model_args)
    from lm_eval_longmem.tasks import registry

    requested = sorted({task for run in runs for task in run.tasks})
    if all(registry.find(task) is not None or registry.group_entries(task) for task in requested):
        return  # all ours: known without indexing lm-eval's thousands of tasks
    install(triggered_by("lm_eval.tasks.manager"))  # our task folder, lm-eval's task index cached, as lm_eval has them
    args = list(config.lm_eval_args)
    include = args[args.index("--include_path") + 1] if "--include_path" in args[:-1] else None
    message = unknown_tasks_message(requested, include, MODEL)
    if message is not None:
        raise UsageError(message)


def lm_eval_command(run: Run, config: SweepConfig, output_path: Path | None = None) -> list[str]:
    """The command that runs one run: the stock lm_eval CLI (or it under `launcher`); the sweep
    itself passes a staging `output_path` (staging.py)."""
    prefix = [*config.launcher, "-m", "lm_eval"] if config.launcher else [sys.executable, "-m", "lm_eval"]
    command = [
        *prefix,
        "run",
        "--model",
        MODEL,
        "--model_args",
        json.dumps(run.model_args),
        "--tasks",
        ",".join(run.tasks),
        "--output_path",
        str(output_path or run.output_path),
    ]
    if run.metadata:
        command += ["--metadata", json.dumps(run.metadata)]
    if run.limit is not None:
        command += ["--limit", f"{run.limit:g}"]
    if config.batch_size is not None:
        command += ["--batch_size", str(config.batch_size)]
    if config.device is not None:
        command += ["--device", config.device]
    return command + list(config.lm_eval_args)


def display_command(command: list[str]) -> str:
    """A command as one would type it (`lm_eval ...` for this Python's `-m lm_eval`)."""
    if command[:3] == [sys.executable, "-m", "lm_eval"]:
        command = ["lm_eval", *command[3:]]
    return shlex.join(command)


def finished_results(run: Run) -> Path | None:
    """The newest results file in the run's folder that records this run, if any."""
    if not run.folder.is_dir():
        return None
    for path in sorted(run.folder.glob("results_*.json"), reverse=True):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and records(data, run):
            return path
    return None


def records(data: dict[str, Any], run: Run) -> bool:
    """Whether a results file's recorded config is this run's."""
    config = data.get("config") or {}
    if config.get("model") != MODEL or _canonical(config.get("model_args")) != _canonical(run.model_args):
        return False
    recorded_limit = config.get("limit")
    if (recorded_limit is None) != (run.limit is None) or (
        run.limit is not None and float(recorded_limit) != run.limit
    ):
        return False
    evaluated = set()
    for key in ("results", "groups", "configs", "group_subtasks"):
        evaluated |= set(data.get(key) or {})
    if not set(run.tasks) <= evaluated:
        return False
    task_configs = [c for c in (data.get("configs") or {}).values() if isinstance(c, dict)]
    wanted = json.loads(json.dumps(run.metadata))
    return bool(task_configs) and all(
        all(
            key in (c.get("metadata") or {}) and _canonical(c["metadata"][key]) == _canonical(value)
            for key, value in wanted.items()
        )
        for c in task_configs
    )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
