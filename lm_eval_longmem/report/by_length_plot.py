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
# Runs that agree draw on top of each other: a style per run keeps every one visible.
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P")


def plot_by_length(report: ByLengthReport, output: str | Path, title: str | None = None) -> tuple[Path, int]:
    """The figure, and how many (task, metric) tables it left out (beyond MAX_PANELS)."""
    check_output(output)
    plt = pyplot()
    tables = list(report.tables().items())
    if not tables:
        from lm_eval_longmem.errors import ResultsFileError

        raise ResultsFileError("Nothing to plot: no task of these runs logs a numeric per-sample metric.")
    shown, left_out = tables[:MAX_PANELS], max(0, len(tables) - MAX_PANELS)
    columns = min(COLUMNS, max(1, len(shown)))
    rows = math.ceil(len(shown) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(PANEL_INCHES[0] * columns, PANEL_INCHES[1] * rows), squeeze=False)
    styles = {
        run: (color, LINE_STYLES[i % len(LINE_STYLES)], MARKERS[i % len(MARKERS)])
        for i, (run, color) in enumerate(zip(report.runs, run_colors(len(report.runs))))
    }
    for ax, ((task, metric), cells) in zip(axes.flat, shown):
        _draw_panel(ax, task, metric, cells, styles, report.floor)
    for ax in list(axes.flat)[len(shown) :]:
        ax.set_visible(False)
    handles = [
        plt.Line2D([], [], color=color, linestyle=line, marker=marker, label=run)
        for run, (color, line, marker) in styles.items()
    ]
    fig.legend(
        handles=handles, loc="lower center", ncol=min(3, len(handles)), frameon=False, bbox_to_anchor=(0.5, -0.02)
    )
    heading = title or f"Score by input length (shaded: {report.settings.describe()})"
    fig.suptitle(wrap(heading, PANEL_INCHES[0] * columns), fontsize="medium")
    fig.tight_layout(rect=(0, 0.06 + 0.02 * (len(handles) // 3), 1, 1))
    return save_figure(fig, output), left_out


def _draw_panel(ax, task: str, metric: str, cells, styles, floor: int) -> None:
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
            wrap(note, PANEL_INCHES[0] * 0.9),
            transform=ax.transAxes,
            va="top",
            fontsize="x-small",
            color="dimgrey",
        )
    values = [v for c in cells if c.mean is not None for v in (c.low, c.high)]
    if values and 0 <= min(values) and max(values) <= 1:  # a share (accuracy, F1): the whole range
        ax.set_ylim(-0.03, 1.03)
    ax.set_title(wrap(f"{task} · {metric.removesuffix(',none')}", PANEL_INCHES[0]), fontsize="small")
    ax.set_xlabel("input tokens (bin mean)", fontsize="small")
    ax.set_ylabel("mean score", fontsize="small")
    ax.grid(True, alpha=0.3)
    ax.tick_params(labelsize="small")
