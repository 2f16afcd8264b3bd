"""Find lm-eval results files and read a forgetting curve or a passkey grid out of them.

lm-eval writes `results_<timestamp>.json` under `--output_path/<model>/`; reading them
here, once, keeps the plotting code free of JSON spelunking.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lm_eval_longmem.errors import ResultsFileError, UsageError
from lm_eval_longmem.report.runs import describe_run, run_label, short_model_name  # noqa: F401 (run_label: public here too)
from lm_eval_longmem.sweep.staging import STAGING_DIR
from lm_eval_longmem.tasks.forgetting_curve.declaration import DECLARATION as FORGETTING_CURVE
from lm_eval_longmem.tasks.passkey.declaration import DECLARATION as PASSKEY

CURVE_METRIC = "curve,none"


@dataclass(frozen=True)
class CurveRun:
    """One model's forgetting curve, as read from one results file.

    `mode` is "accuracy" for `--model longmem` (per-token accuracies with mean/std per
    length) and "reduced" for `--model hf` (exact-copy rates only, no memory lengths).
    """

    label: str
    mode: str
    points: tuple[dict, ...]
    fine_memory_length: int | None
    coarse_memory_length: int | None
    fine_is_lower_bound: bool
    coarse_is_lower_bound: bool
    training_length: int | None
    source: str
    model: str = ""  # for legends: the model, and "method (key=value)" apart
    variant: str = ""


class MissingResultsError(UsageError, ResultsFileError, FileNotFoundError):
    """No results file where one was named."""


def read_results(source: Path) -> dict:
    """A results file's JSON; a corrupt or foreign file is a `ResultsFileError` naming it."""
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ResultsFileError(f"{source} is not a readable lm-eval results file: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise ResultsFileError(f"{source} is not an lm-eval results file (no 'results' mapping)")
    return data


def find_results_file(path: str | Path) -> Path:
    """Return `path` if it is a file, else the newest `results_*.json` anywhere under it.

    Accepting a directory lets users pass the same `--output_path` they gave lm-eval.
    """
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise MissingResultsError(f"No such results file or directory: {path}")
    candidates = results_files_under(path)
    if not candidates:
        raise MissingResultsError(f"No lm-eval results file (results_*.json) found under {path}")
    return max(candidates, key=lambda p: p.stat().st_mtime)


# lm-eval names its results `results_<date>.json` inside an --output_path folder, and
# `<name>_<date>.json` beside an --output_path given as `<name>.json` (its date: the run's start,
# `datetime.isoformat()` with ':' as '-').
_RESULTS_NAME = re.compile(r"(results_.*|.*_\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(\.\d+)?)\.json")


def results_files_under(folder: Path) -> list[Path]:
    """Every lm-eval results file below `folder` (`results_*.json`, or `<name>_<date>.json` from
    `--output_path <name>.json`), sorted, except those of sweep runs still running (in
    `.sweep_partial/`: possibly half-written; they move out when their run has finished)."""
    return sorted(
        p
        for p in folder.rglob("*.json")
        if _RESULTS_NAME.fullmatch(p.name) and p.is_file() and STAGING_DIR not in p.relative_to(folder).parts
    )


def load_curve_run(path: str | Path, task: str = FORGETTING_CURVE.name) -> CurveRun:
    """Read `task`'s forgetting curve and the run's model description from a results file."""
    source = find_results_file(path)
    return curve_run_from(read_results(source), source, task)


def curve_run_from(data: dict, source: Path, task: str = FORGETTING_CURVE.name) -> CurveRun:
    """The forgetting curve in an already-read results file (`source` names it in errors)."""
    task_results = data.get("results", {})
    if task not in task_results:
        present = ", ".join(sorted(task_results)) or "none"
        raise ResultsFileError(f"{source} has no results for task {task!r}; tasks present: {present}")
    metrics = task_results[task]
    if CURVE_METRIC not in metrics:
        present = ", ".join(sorted(metrics)) or "none"
        raise ResultsFileError(f"{source}: task {task!r} has no {CURVE_METRIC!r} metric; metrics present: {present}")
    curve = metrics[CURVE_METRIC]
    run = describe_run(data, Path(source))
    return CurveRun(
        label=run.short_label,
        mode=curve.get("mode", "accuracy"),
        points=tuple(sorted(curve["points"], key=lambda point: point["length"])),
        fine_memory_length=curve.get("fine_memory_length"),
        coarse_memory_length=curve.get("coarse_memory_length"),
        fine_is_lower_bound=bool(curve.get("fine_is_lower_bound", False)),
        coarse_is_lower_bound=bool(curve.get("coarse_is_lower_bound", False)),
        training_length=_training_length(data, task),
        source=str(source),
        model=short_model_name(run.model),
        variant=run.variant,
    )


PASSKEY_GRID_METRIC = "grid,none"


@dataclass(frozen=True)
class PasskeyGridRun:
    """One model's passkey accuracy grid: rows = depths, columns = lengths (None: no documents)."""

    label: str
    lengths: tuple[int, ...]
    depths: tuple[int, ...]
    accuracy: tuple[tuple[float | None, ...], ...]
    length_unit: str
    overall: float
    source: str
    model: str = ""
    variant: str = ""


def load_passkey_grid(path: str | Path, task: str = PASSKEY.name) -> PasskeyGridRun:
    source = find_results_file(path)
    return passkey_grid_from(read_results(source), source, task)


def passkey_grid_from(data: dict, source: Path, task: str = PASSKEY.name) -> PasskeyGridRun:
    metrics = data.get("results", {}).get(task)
    if metrics is None or PASSKEY_GRID_METRIC not in metrics:
        present = ", ".join(sorted(data.get("results", {}))) or "none"
        raise ResultsFileError(
            f"{source} has no {PASSKEY_GRID_METRIC!r} metric for task {task!r}; tasks present: {present}"
        )
    grid = metrics[PASSKEY_GRID_METRIC]
    run = describe_run(data, Path(source))
    return PasskeyGridRun(
        label=run.short_label,
        lengths=tuple(grid["lengths"]),
        depths=tuple(grid["depths"]),
        accuracy=tuple(tuple(row) for row in grid["accuracy"]),
        length_unit=grid.get("length_unit", "tokens"),
        overall=grid.get("overall", float("nan")),
        source=str(source),
        model=short_model_name(run.model),
        variant=run.variant,
    )


def _training_length(data: dict[str, Any], task: str) -> int | None:
    """Prefer what the model reported; fall back to the task's protocol metadata."""
    from_model = data.get("config", {}).get("longmem_training_length")
    if from_model is not None:
        return from_model
    protocol = data.get("configs", {}).get(task, {}).get("metadata", {}).get("protocol", {})
    return protocol.get("training_length")
