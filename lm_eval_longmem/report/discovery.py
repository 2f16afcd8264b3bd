"""Find every run under the paths a user names, for the leaderboard and the comparison plots.

Arguments are results files or folders searched recursively for `results_*.json` (the
`<output_path>/<model>/results_<datetime>.json` layout lm-eval writes, or a folder of many
output paths). One unreadable or foreign file must not sink a table of fifty runs, so such
files are skipped and reported by name; only "nothing usable at all" is an error.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, TypeVar

from lm_eval_longmem.errors import ResultsFileError
from lm_eval_longmem.report.results_files import MissingResultsError, read_results, results_files_under
from lm_eval_longmem.report.run_settings import call_settings, differing, settings_key, task_settings
from lm_eval_longmem.report.runs import SHOWN_SETTINGS_KEY, RunInfo, describe_run

T = TypeVar("T")


@dataclass
class Discovery:
    runs: list[RunInfo]  # every readable results file, in the order the paths were given
    skipped: list[tuple[Path, str]]  # (file, why) for each file that was not usable


def collect_runs(paths: Iterable[str | Path]) -> Discovery:
    """Read every results file under `paths`; a missing path or no file at all is an error."""
    paths = [Path(path) for path in paths]
    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        raise MissingResultsError(f"No such results file or directory: {', '.join(missing)}")
    files: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        found = [path] if path.is_file() else results_files_under(path)
        for file in found:
            if file.resolve() not in seen:
                seen.add(file.resolve())
                files.append(file)
    where = ", ".join(str(path) for path in paths)
    if not files:
        raise MissingResultsError(
            f"No lm-eval results files (results_*.json) found under {where}. Pass the folder given to "
            "lm_eval's --output_path, or results files themselves."
        )
    runs, skipped = [], []
    for file in files:
        try:
            runs.append(describe_run(read_results(file), file))
        except ResultsFileError as err:
            skipped.append((file, str(err)))
    if not runs:
        reasons = "; ".join(reason for _, reason in skipped)
        raise ResultsFileError(f"No readable lm-eval results under {where}: {reasons}")  # damaged: exit 1
    return Discovery(runs, skipped)


def newest_per_run(runs: Iterable[RunInfo], task: str | None = None) -> list[RunInfo]:
    """The newest file of each model + method + arguments, in first-seen order; with `task`,
    of each model + method + arguments + evaluation settings of that task (run_settings.py),
    and the settings that differ between the kept runs shown in their labels."""
    newest: dict[tuple, RunInfo] = {}
    for run in runs:
        key = run.identity if task is None else (run.identity, settings_key(_settings(run, task)))
        kept = newest.get(key)
        if kept is None or run.date > kept.date:
            newest[key] = run
    kept = list(newest.values())
    if task is None:
        return kept
    shown = differing([call_settings(r.data) for r in kept], [{task: task_settings(r.data, task)} for r in kept])
    for run, settings in zip(kept, shown):
        if settings:
            run.data[SHOWN_SETTINGS_KEY] = settings  # in memory only: every reader of the run sees it
    return [describe_run(run.data, run.source) if settings else run for run, settings in zip(kept, shown)]


def _settings(run: RunInfo, task: str) -> dict[str, str]:
    return {**call_settings(run.data), **task_settings(run.data, task)}


def runs_with_task(paths: Iterable[str | Path], task: str, stream: TextIO | None = None) -> list[RunInfo]:
    """For a plot of `task`: the newest run of each identity that has it, skipped files reported."""
    discovery = collect_runs(paths)
    report_skipped(discovery.skipped, stream)
    having = [run for run in discovery.runs if task in run.data["results"]]
    if not having:
        present = sorted({name for run in discovery.runs for name in run.data["results"]})
        raise ResultsFileError(
            f"None of the {len(discovery.runs)} results file(s) found has results for task {task!r} "
            f"(tasks present: {', '.join(present) or 'none'}). Run lm_eval with --tasks {task} first."
        )
    return newest_per_run(having, task)


def read_each(runs: Iterable[RunInfo], reader: Callable[[dict, Path], T], stream: TextIO | None = None) -> list[T]:
    """`reader(data, source)` for every run; a run it cannot read is skipped with a warning, not fatal."""
    read, skipped = [], []
    for run in runs:
        try:
            read.append(reader(run.data, run.source))
        except ResultsFileError as err:
            skipped.append((run.source, str(err)))
    if not read:
        raise ResultsFileError("; ".join(reason for _, reason in skipped))
    report_skipped(skipped, stream)
    return read


def report_skipped(skipped: Iterable[tuple[Path, str]], stream: TextIO | None = None) -> None:
    for file, reason in skipped:
        # Messages from read_results already start with the file's name.
        message = reason if reason.startswith(str(file)) else f"{file}: {reason}"
        print(f"warning: skipped {message}", file=stream or sys.stderr)
