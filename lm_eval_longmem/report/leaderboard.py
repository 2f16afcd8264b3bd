"""The leaderboard's rows and columns: one row per model + method + arguments + evaluation
settings, sorted.

A run is often evaluated in several lm_eval calls (the forgetting curve today, passkey
tomorrow), each writing its own results file. A row therefore takes each task's numbers from
the newest file of that run that has the task, so a later passkey-only file does not hide
the earlier forgetting curve. Files evaluated differently (`--limit`, a task's `--metadata`, the
chat template, ...: run_settings.py) never share a row: the `samples` column counts each row's
documents and a `settings` column names what differs. `keep_all` lists every file as its own
row instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from lm_eval_longmem.errors import ResultsFileError, UsageError
from lm_eval_longmem.report.headlines import headlines_of, no_numbers_note
from lm_eval_longmem.report.run_settings import (
    call_settings,
    compatible,
    differing,
    sample_count,
    samples_text,
    settings_key,
    settings_text,
    task_settings,
)
from lm_eval_longmem.report.runs import RunInfo, unambiguous_model_names
from lm_eval_longmem.tasks.headlines import Column, Headline

ID_COLUMNS = ("model", "method", "arguments")
DATE_COLUMN = "date"
SAMPLES_COLUMN = "samples"
SETTINGS_COLUMN = "settings"


class UnknownColumnError(UsageError):
    """`--sort` named a column the table does not have."""


@dataclass
class Row:
    run: RunInfo  # the newest file that contributed
    cells: dict[str, Headline] = field(default_factory=dict)
    sources: list[Path] = field(default_factory=list)
    model_name: str | None = None  # what the model column shows: short, unambiguous among the rows
    call: dict[str, str] = field(default_factory=dict)  # the lm_eval call's settings (run_settings.py)
    tasks: dict[str, dict[str, str]] = field(default_factory=dict)  # each task's own settings
    samples: dict[str, int | None] = field(default_factory=dict)  # documents scored per task
    differs: dict[str, str] = field(default_factory=dict)  # the settings not alike on every row

    def value(self, column: str):
        if column == "model":
            return self.model_name or self.run.model
        if column == "method":
            return self.run.method
        if column == "arguments":
            return self.run.arguments_text
        if column == DATE_COLUMN:
            return format_date(self.run.date)
        if column == SAMPLES_COLUMN:
            return samples_text(self.samples)
        if column == SETTINGS_COLUMN:
            return settings_text(self.differs)
        cell = self.cells.get(column)
        return None if cell is None else cell.value


@dataclass
class Leaderboard:
    columns: list[Column]  # the metric columns, in display order
    rows: list[Row]
    show_date: bool = False
    skipped: list[tuple[Path, str]] = field(default_factory=list)  # files with no numeric results

    @property
    def text_columns(self) -> list[str]:
        date = [DATE_COLUMN] if self.show_date else []
        settings = [SETTINGS_COLUMN] if any(row.differs for row in self.rows) else []
        return [*ID_COLUMNS, *date, SAMPLES_COLUMN, *settings]

    @property
    def column_names(self) -> list[str]:
        return [*self.text_columns, *(c.name for c in self.columns)]


def _why_no_numbers(results: dict) -> str:
    why = f"no numeric results (tasks present: {_tasks_present(results)})"
    metrics = {key.partition(",")[0] for entry in results.values() if isinstance(entry, dict) for key in entry}
    if "bypass" in metrics:  # lm-eval's placeholder metric under --predict_only
        why += "; a --predict_only run computes no metrics: run lm_eval again without --predict_only"
    return why


def build_leaderboard(runs: Iterable[RunInfo], keep_all: bool = False) -> Leaderboard:
    rows: dict[object, list[Row]] = {}  # per run and call settings: rows whose tasks' settings differ
    skipped = []
    columns: dict[str, Column] = {}
    for run in sorted(runs, key=lambda r: r.date):  # oldest first: newer files overwrite tasks
        by_task = headlines_of(run.data["results"], run.data.get("higher_is_better"))
        if not by_task:
            skipped.append((run.source, _why_no_numbers(run.data["results"])))
            continue
        call = call_settings(run.data)
        tasks = {task: task_settings(run.data, task) for task in by_task}
        row = _row_for(rows, run, call, tasks, keep_all)
        row.run = run
        row.sources.append(run.source)
        row.call = call
        row.tasks.update(tasks)
        row.samples.update({task: sample_count(run.data, task) for task in by_task})
        for task, headlines in by_task.items():
            for name in [name for name, cell in row.cells.items() if cell.column.task == task]:
                del row.cells[name]
            for headline in headlines:
                row.cells[headline.column.name] = headline
                columns.setdefault(headline.column.name, headline.column)
    if not rows:
        reasons = "; ".join(f"{source}: {why}" for source, why in skipped)
        raise ResultsFileError(f"None of the results files has numeric results of any task ({reasons}).")
    every_row = [row for group in rows.values() for row in group]
    for row, shown in zip(every_row, differing([r.call for r in every_row], [r.tasks for r in every_row])):
        row.differs = shown
    names = unambiguous_model_names(row.run.model for row in every_row)
    for row in every_row:
        row.model_name = names[row.run.model]
    ordered = sorted(every_row, key=lambda row: (row.run.model, row.run.method, row.run.arguments_text, row.run.date))
    return Leaderboard(sorted(columns.values(), key=lambda c: c.order), ordered, keep_all, skipped)


def _row_for(rows: dict, run: RunInfo, call: dict, tasks: dict, keep_all: bool) -> Row:
    """The row a file joins: the latest of its run and call settings whose tasks are set alike
    (or absent), else a new one."""
    group = rows.setdefault(run.source if keep_all else (run.identity, settings_key(call)), [])
    for row in reversed(group):
        if compatible(row.tasks, tasks.items()):
            return row
    group.append(Row(run))
    return group[-1]


def _tasks_present(results: dict) -> str:
    """ "forgetting_curve (no tested length gave numbers: ...), hellaswag": each task, and why
    it gave nothing where the file says."""
    notes = {task: no_numbers_note(task, metrics) for task, metrics in sorted(results.items())}
    return ", ".join(f"{task} ({note})" if note else task for task, note in notes.items()) or "none"


def sort_leaderboard(board: Leaderboard, column: str, ascending: bool | None = None) -> Leaderboard:
    """Rows by `column`, best first (highest accuracy, lowest perplexity); blanks always last."""
    names = board.column_names
    if column not in names:
        raise UnknownColumnError(f"Unknown column {column!r} for --sort. Valid columns: {', '.join(names)}")
    metric = next((c for c in board.columns if c.name == column), None)
    if ascending is None:
        ascending = True if metric is None else not metric.higher_is_better
    present = [row for row in board.rows if row.value(column) is not None]
    blank = [row for row in board.rows if row.value(column) is None]
    # ">24" (still met at the longest length) ranks above an exact 24; other ties keep their order.
    present.sort(key=lambda row: (row.value(column), _is_lower_bound(row, column)), reverse=not ascending)
    return Leaderboard(board.columns, present + blank, board.show_date, board.skipped)


def _is_lower_bound(row: Row, column: str) -> bool:
    cell = row.cells.get(column)
    return cell is not None and cell.lower_bound


def format_date(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
