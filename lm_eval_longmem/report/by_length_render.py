"""A by-length report as Markdown (runs side by side, one table per task and metric), CSV and
JSON (one row per run, task, metric and bin, full precision)."""

from __future__ import annotations

import csv
import io
import json
import math

from lm_eval_longmem.report.by_length import BinCell, ByLengthReport

CSV_COLUMNS = ("run", "task", "metric", "bin", "low_tokens", "high_tokens", "count", "mean", "ci_low", "ci_high")


def markdown_cell(cell: BinCell | None, floor: int) -> str:
    if cell is None:
        return ""
    if cell.mean is None:
        return f"n={cell.count} (under {floor})"
    return f"{cell.mean:.3f} [{cell.low:.3f}, {cell.high:.3f}] n={cell.count}"


def to_markdown(report: ByLengthReport) -> str:
    lines = [
        f"Scores by input length (tokens). Intervals: {report.settings.describe()}; "
        f"bins with fewer than {report.floor} samples show only their count.",
        "",
    ]
    for (task, metric), cells in report.tables().items():
        runs = [run for run in report.runs if any(c.run == run for c in cells)]
        by_key = {(c.run, c.bin): c for c in cells}
        lines += [f"### {task} · {metric}", "", _row(["input tokens", *runs]), "|---|" + "---:|" * len(runs)]
        for length_bin in report.bins:
            if any((run, length_bin) in by_key for run in runs):
                row = [length_bin.label] + [markdown_cell(by_key.get((run, length_bin)), report.floor) for run in runs]
                lines.append(_row(row))
        lines.append("")
    lines += _notes(report)
    return "\n".join(lines).rstrip("\n") + "\n"


def _notes(report: ByLengthReport) -> list[str]:
    notes = []
    for item in report.non_numeric:
        shown = ", ".join(map(str, item.doc_ids[:10])) + (" ..." if len(item.doc_ids) > 10 else "")
        notes.append(
            f"- {item.run}: {item.task} · {item.metric}: {len(item.doc_ids)} sample(s) whose value is not a "
            f"number, left out (doc_id {shown})"
        )
    for run, task in report.without_metric:
        notes.append(f"- {run}: {task} logs no numeric per-sample metric; not binned")
    for (run, task), count in report.below_bins.items():
        notes.append(f"- {run}: {task}: {count} sample(s) shorter than the first bin edge, left out")
    for run, tokenizer in report.tokenizers.items():
        notes.append(f"- {run}: lengths counted with {tokenizer}")
    return ["Notes:", "", *notes, ""] if notes else []


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def to_csv(report: ByLengthReport) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for cell in report.cells:
        writer.writerow([_blank(value) for value in _values(cell)])
    return buffer.getvalue()


def _values(cell: BinCell) -> tuple:
    high = None if math.isinf(cell.bin.high) else int(cell.bin.high)
    return (
        cell.run,
        cell.task,
        cell.metric,
        cell.bin.label,
        cell.bin.low,
        high,
        cell.count,
        cell.mean,
        cell.low,
        cell.high,
    )


def _blank(value):
    return "" if value is None else value


def to_json(report: ByLengthReport) -> str:
    document = {
        "interval": {
            "method": "percentile bootstrap of the mean",
            "level": report.settings.level,
            "resamples": report.settings.resamples,
            "seed": report.settings.seed,
        },
        "floor": report.floor,
        "bins": [
            {"label": b.label, "low": b.low, "high": None if math.isinf(b.high) else int(b.high)} for b in report.bins
        ],
        "runs": report.runs,
        "tokenizers": report.tokenizers,
        "rows": [dict(zip(CSV_COLUMNS, _values(cell))) | {"mean_length": cell.mean_length} for cell in report.cells],
        "non_numeric": [
            {"run": i.run, "task": i.task, "metric": i.metric, "doc_ids": list(i.doc_ids)} for i in report.non_numeric
        ],
        "without_numeric_metric": [{"run": run, "task": task} for run, task in report.without_metric],
        "below_first_bin": [{"run": r, "task": t, "count": n} for (r, t), n in report.below_bins.items()],
    }
    return json.dumps(document, indent=2) + "\n"
