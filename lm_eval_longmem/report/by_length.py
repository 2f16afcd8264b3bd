"""Every per-sample metric of every task, by input-length bin, for one or more logged runs.

The bins are shared by every run and task of a report, so two runs (two methods, or `hf` and
`longmem` on the same samples) compare bin by bin. A group's rows pool its tasks' samples. A
bin with fewer samples than the floor gets its count but no mean or interval: a bootstrap
over three samples is narrower than the truth. Values that are not one number, and tasks that
log no numeric per-sample metric at all, are listed in the report, never dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lm_eval_longmem.common.bootstrap import DEFAULT_SETTINGS, BootstrapSettings, as_number, bootstrap_interval
from lm_eval_longmem.common.length_bins import LengthBin, bin_of
from lm_eval_longmem.report.logged_samples import LoggedRun, LoggedSample

DEFAULT_FLOOR = 10


@dataclass(frozen=True)
class BinCell:
    run: str
    task: str
    metric: str
    bin: LengthBin
    count: int
    mean: float | None  # None when count is under the floor
    low: float | None
    high: float | None
    mean_length: float  # mean input length of the bin's samples, in tokens (where a plot puts the point)


@dataclass(frozen=True)
class NonNumeric:
    run: str
    task: str
    metric: str
    doc_ids: tuple[int, ...]


@dataclass
class ByLengthReport:
    bins: list[LengthBin]
    runs: list[str]  # run labels, in the order given
    cells: list[BinCell] = field(default_factory=list)
    non_numeric: list[NonNumeric] = field(default_factory=list)
    without_metric: list[tuple[str, str]] = field(default_factory=list)  # (run, task) with no numeric metric
    below_bins: dict[tuple[str, str], int] = field(default_factory=dict)  # (run, task) -> samples under the first edge
    tokenizers: dict[str, str] = field(default_factory=dict)  # run -> "the tokenizer X": what counted its lengths
    floor: int = DEFAULT_FLOOR
    settings: BootstrapSettings = DEFAULT_SETTINGS

    def tables(self) -> dict[tuple[str, str], list[BinCell]]:
        """(task, metric) -> its cells, in report order."""
        grouped: dict[tuple[str, str], list[BinCell]] = {}
        for cell in self.cells:
            grouped.setdefault((cell.task, cell.metric), []).append(cell)
        return grouped


def unique_labels(runs: Sequence[LoggedRun]) -> list[str]:
    labels, seen = [], {}
    for run in runs:
        label = run.info.short_label
        seen[label] = seen.get(label, 0) + 1
        labels.append(label if seen[label] == 1 else f"{label} [{seen[label]}]")
    return labels


def report_units(run: LoggedRun) -> dict[str, list[LoggedSample]]:
    """task or group -> its samples: groups first (pooling their tasks'), then each task."""
    units = {}
    for group, members in sorted(run.groups.items()):
        pooled = [sample for task in members for sample in run.samples.get(task, [])]
        if pooled:
            units[group] = pooled
    units.update(sorted(run.samples.items()))
    return units


def build_report(
    runs: Sequence[LoggedRun],
    lengths: Sequence[dict[str, list[int]]],
    make_bins: Callable[[list[int]], list[LengthBin]],
    floor: int = DEFAULT_FLOOR,
    settings: BootstrapSettings = DEFAULT_SETTINGS,
) -> ByLengthReport:
    """`lengths[i][task]`: the input length of each of `runs[i].samples[task]`, in order."""
    labels = unique_labels(runs)
    bins = make_bins([n for per_task in lengths for values in per_task.values() for n in values])
    report = ByLengthReport(bins, labels, floor=floor, settings=settings)
    for run, label, run_lengths in zip(runs, labels, lengths):
        length_of = {id(s): n for task, values in run_lengths.items() for s, n in zip(run.samples[task], values)}
        for unit, samples in report_units(run).items():
            _add_unit(report, label, unit, samples, length_of)
    return report


def _add_unit(report: ByLengthReport, run: str, unit: str, samples: list[LoggedSample], length_of: dict) -> None:
    metrics = sorted({name for sample in samples for name in sample.metrics})
    numeric_metrics = 0
    for metric in metrics:
        values: dict[LengthBin, list[tuple[float, int]]] = {b: [] for b in report.bins}
        bad, below = [], 0
        for sample in samples:
            if metric not in sample.metrics:
                continue
            value = as_number(sample.metrics[metric])
            if value is None:
                bad.append(sample.doc_id)
                continue
            where = bin_of(length_of[id(sample)], report.bins)
            if where is None:
                below += 1
            else:
                values[where].append((value, length_of[id(sample)]))
        # a metric no sample logs as a number is a summary, not a per-sample score (the passkey
        # grid, a corpus-level metric's passthrough): left out without a note per metric and run
        if bad and (any(values.values()) or below):
            report.non_numeric.append(NonNumeric(run, unit, metric, tuple(bad)))
        if below:
            report.below_bins[(run, unit)] = max(below, report.below_bins.get((run, unit), 0))
        if not any(values.values()):
            continue
        numeric_metrics += 1
        for length_bin, held in values.items():
            if held:
                report.cells.append(_cell(run, unit, metric, length_bin, held, report))
    if numeric_metrics == 0:
        report.without_metric.append((run, unit))


def _cell(run, unit, metric, length_bin, held, report: ByLengthReport) -> BinCell:
    scores = [value for value, _ in held]
    mean_length = sum(n for _, n in held) / len(held)
    if len(scores) < report.floor:
        return BinCell(run, unit, metric, length_bin, len(scores), None, None, None, mean_length)
    low, high = bootstrap_interval(scores, report.settings)
    return BinCell(run, unit, metric, length_bin, len(scores), sum(scores) / len(scores), low, high, mean_length)
