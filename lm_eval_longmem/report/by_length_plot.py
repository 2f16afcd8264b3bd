"""A by-length report as a figure: score against input length, one panel per task and metric,
one line per run (one colour per run across panels), the bootstrap interval shaded.

A point sits at the mean input length of its bin's samples, on a base-2 axis; a bin under the
floor is named in the panel's corner instead of drawn, so no one reads a mean into it. The
panel title names the task and metric; the legend names the runs once, under the panels.
"""

from __future__ import annotations

import math
from pathlib import Path

from lm_eval_longmem.report.by_length import ByLengthReport
from lm_eval_longmem.report.figures import check_output, log2_axis, pyplot, run_colors, save_figure, wrap

MAX_PANELS = 12
COLUMNS = 3
PANEL_INCHES = (4.2, 3.1)
LARGE_PANEL_INCHES = (6.4, 4.0)  # one or two panels: room to read them
LEGEND_CHARS_PER_INCH = 11
LEGEND_ROW_INCHES = 0.3
TITLE_INCHES = 0.5
# Runs that agree draw on top of each other: a style per run keeps every one visible.
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P")


def plot_by_length(report: ByLengthReport, output: str | Path, title: str | None = None) -> tuple[Path, int]:
    """The figure, and how many (task, metric) tables it left out: those with fewer than two
    bins with a mean (no line to draw), and any beyond MAX_PANELS."""
    check_output(output)
    plt = pyplot()
    tables = [(key, cells) for key, cells in report.tables().items() if drawable(cells)]
    if not tables:
        from lm_eval_longmem.errors import ResultsFileError

        raise ResultsFileError(
            "Nothing to plot: no task and metric has two length bins with a mean (at least --min-samples "
            f"{report.floor} samples each); the tables list what there is."
        )
    shown, left_out = tables[:MAX_PANELS], len(report.tables()) - min(len(tables), MAX_PANELS)
    columns = min(COLUMNS, max(1, len(shown)))
    rows = math.ceil(len(shown) / columns)
    panel = PANEL_INCHES if len(shown) > 2 else LARGE_PANEL_INCHES
    labels, model = legend_text(report.runs)
    width = panel[0] * columns
    per_row = max(1, min(len(labels), int(width * LEGEND_CHARS_PER_INCH) // (max(map(len, labels)) + 8)))
    legend_inches = LEGEND_ROW_INCHES * math.ceil(len(labels) / per_row)
    height = panel[1] * rows + legend_inches + TITLE_INCHES
    fig, axes = plt.subplots(rows, columns, figsize=(width, height), squeeze=False)
    styles = {
        run: (color, LINE_STYLES[i % len(LINE_STYLES)], MARKERS[i % len(MARKERS)])
        for i, (run, color) in enumerate(zip(report.runs, run_colors(len(report.runs))))
    }
    for ax, ((task, metric), cells) in zip(axes.flat, shown):
        _draw_panel(ax, task, metric, cells, styles, report.floor, panel[0])
    for ax in list(axes.flat)[len(shown) :]:
        ax.set_visible(False)
    handles = [
        plt.Line2D([], [], color=color, linestyle=line, marker=marker, label=label)
        for (color, line, marker), label in zip(styles.values(), labels)
    ]
    fig.legend(handles=handles, loc="lower center", ncol=per_row, frameon=False, bbox_to_anchor=(0.5, 0.0))
    heading = (title or "Score by input length") + (f": {model}" if model else "")
    fig.suptitle(wrap(f"{heading}\n(shaded: {report.settings.describe()})", width), fontsize="medium")
    fig.tight_layout(rect=(0, legend_inches / height, 1, 1))
    return save_figure(fig, output), left_out


def legend_text(runs: list[str]) -> tuple[list[str], str | None]:
    """Legend entries, and the model when every run names the same one ("model · method ...":
    the model then goes to the title once)."""
    models = {run.split(" · ", 1)[0] for run in runs}
    if len(models) == 1 and all(" · " in run for run in runs):
        return [run.split(" · ", 1)[1] for run in runs], models.pop()
    return list(runs), None


def drawable(cells) -> bool:
    """A line needs two points: a task and metric with under two scored bins in every run is
    left to the tables."""
    scored: dict[str, int] = {}
    for cell in cells:
        if cell.mean is not None:
            scored[cell.run] = scored.get(cell.run, 0) + 1
    return max(scored.values(), default=0) >= 2


def _draw_panel(ax, task: str, metric: str, cells, styles, floor: int, panel_width: float) -> None:
    for index, (run, (color, line, marker)) in enumerate(styles.items()):
        mine = sorted((c for c in cells if c.run == run), key=lambda c: c.bin.low)
        scored = [c for c in mine if c.mean is not None]
        if scored:
            x = [c.mean_length for c in scored]
            ax.plot(
                x,
                [c.mean for c in scored],
                color=color,
                linestyle=line,
                marker=marker,
                markersize=max(3, 7 - 2 * index),
                linewidth=1.6,
            )
            ax.fill_between(x, [c.low for c in scored], [c.high for c in scored], color=color, alpha=0.18, linewidth=0)
    lengths = [c.mean_length for c in cells if c.mean_length > 0]
    if lengths and max(lengths) >= 2 * min(lengths):
        log2_axis(ax)
    sparse = sorted({c.bin for c in cells if c.mean is None}, key=lambda b: b.low)
    if sparse:  # named, not drawn: a point there would read as a score
        note = f"under {floor} samples: " + ", ".join(b.label for b in sparse)
        ax.text(
            0.02,
            0.97,
            wrap(note, panel_width * 0.9),
            transform=ax.transAxes,
            va="top",
            fontsize="x-small",
            color="dimgrey",
        )
    values = [v for c in cells if c.mean is not None for v in (c.low, c.high)]
    if values and 0 <= min(values) and max(values) <= 1:  # a share (accuracy, F1): the whole range
        ax.set_ylim(-0.03, 1.03)
    ax.set_title(wrap(f"{task} · {metric.removesuffix(',none')}", panel_width), fontsize="small")
    ax.set_xlabel("input tokens (bin mean)", fontsize="small")
    ax.set_ylabel("mean score", fontsize="small")
    ax.grid(True, alpha=0.3)
    ax.tick_params(labelsize="small")
