"""The per-sample records lm-eval writes with `--log_samples`, read back run by run.

lm-eval 0.4.13 writes, beside each `results_<date>.json`, one `samples_<task>_<date>.jsonl`
per task: a line per document and filter, whose `arguments` hold the requests
(`{"gen_args_0": {"arg_0": context, "arg_1": continuation or generation kwargs}, ...}`),
`metrics` names the per-sample metrics and each metric's value sits at the top level. The
files do not depend on the model type, so `hf`, `vllm` and `longmem` runs read alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval_longmem.errors import ResultsFileError, UsageError
from lm_eval_longmem.report.results_files import read_results, results_files_under
from lm_eval_longmem.report.runs import RunInfo, describe_run

RESULTS_PREFIX = "results_"


class NoLoggedSamplesError(UsageError):
    """A folder holds results but no per-sample files (the run lacked --log_samples)."""


class MissingFolderError(UsageError, FileNotFoundError):
    """A path named on the command line is not there."""


@dataclass(frozen=True)
class Request:
    """One request of a sample: the text the model read, split as lm-eval split it."""

    context: str
    continuation: str  # "" for generation (arg_1 is its kwargs) and rolling loglikelihood


@dataclass(frozen=True)
class LoggedSample:
    doc_id: int
    requests: tuple[Request, ...]
    metrics: dict[str, Any]  # "<metric>,<filter>" -> the value as logged (a number, or not)


@dataclass
class LoggedRun:
    info: RunInfo
    results_file: Path
    samples: dict[str, list[LoggedSample]] = field(default_factory=dict)  # task -> its samples
    groups: dict[str, list[str]] = field(default_factory=dict)  # group -> its subtasks (nested ones too)

    @property
    def data(self) -> dict:
        return self.info.data


def read_logged_runs(paths: list[str | Path]) -> list[LoggedRun]:
    """Every run under `paths` (folders searched recursively, or results files) with its samples.
    A missing path, or a folder whose runs logged no samples, is a one-line error."""
    runs = []
    for path in map(Path, paths):
        if not path.exists():
            raise MissingFolderError(f"No such results folder or file: {path}")
        files = [path] if path.is_file() else results_files_under(path)
        if not files:
            raise NoLoggedSamplesError(
                f"No lm-eval results (results_*.json) under {path}: pass the folder given to lm_eval's --output_path."
            )
        found = [run for run in (read_logged_run(file) for file in files) if run.samples]
        if not found:
            raise NoLoggedSamplesError(
                f"{path} has results but no per-sample files (samples_*.jsonl): rerun lm_eval with --log_samples."
            )
        runs.extend(found)
    return runs


def read_logged_run(results_file: Path) -> LoggedRun:
    data = read_results(results_file)
    run = LoggedRun(describe_run(data, results_file), results_file)
    run.groups = expand_groups(data.get("group_subtasks") or {})
    date = results_file.stem.removeprefix(RESULTS_PREFIX)
    for samples_file in sorted(results_file.parent.glob(f"samples_*_{date}.jsonl")):
        task = samples_file.name.removeprefix("samples_").removesuffix(f"_{date}.jsonl")
        run.samples[task] = read_samples_file(samples_file)
    return run


def expand_groups(group_subtasks: dict[str, list[str]]) -> dict[str, list[str]]:
    """group -> the tasks under it, a subgroup replaced by its own tasks (RULER, LongBench nest)."""

    def leaves(name: str, seen: frozenset) -> list[str]:
        if name not in group_subtasks or name in seen:
            return [name]
        return [leaf for sub in group_subtasks[name] for leaf in leaves(sub, seen | {name})]

    return {group: leaves(group, frozenset()) for group, members in group_subtasks.items() if members}


def read_samples_file(path: Path) -> list[LoggedSample]:
    samples = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ResultsFileError(f"{path}, line {number}: not JSON ({err})") from None
            samples.append(sample_from_record(record))
    return samples


def sample_from_record(record: dict[str, Any]) -> LoggedSample:
    arguments = record.get("arguments") or {}
    if isinstance(arguments, dict):  # lm-eval's file form: gen_args_<i> -> arg_<j>
        ordered = [arguments[key] for key in sorted(arguments, key=lambda k: int(k.rsplit("_", 1)[-1]))]
        calls = [[call[key] for key in sorted(call, key=lambda k: int(k.rsplit("_", 1)[-1]))] for call in ordered]
    else:  # in-memory form: a list of argument tuples
        calls = [list(call) for call in arguments]
    requests = tuple(
        Request(str(call[0]), call[1] if len(call) > 1 and isinstance(call[1], str) else "") for call in calls if call
    )
    suffix = record.get("filter", "none")
    metrics = {f"{name},{suffix}": record.get(name) for name in record.get("metrics") or []}
    return LoggedSample(int(record.get("doc_id", -1)), requests, metrics)
