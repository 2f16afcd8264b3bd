"""Passkey heatmaps: accuracy per (length, depth) cell, one panel per run.

Depth on the y axis (0 % at the top, where the key follows the task line), length on the x
axis, green for found and red for missed, each cell annotated; cells without documents are
left blank. Cells keep a fixed, readable size; panels wrap into a grid of at most three
columns (two rows of three for five runs, not one strip thousands of pixels wide, whose cells
shrink to nothing when the figure is shown at screen width).
"""

from __future__ import annotations

import math
from pathlib import Path

from lm_eval_longmem.report.figures import check_output, legend_labels, pyplot, save_figure, wrap
from lm_eval_longmem.report.results_files import PasskeyGridRun

MAX_COLUMNS = 3
MAX_WIDTH_INCHES = 16.0  # about 2,100 px at the figures' DPI
CELL_WIDTH_INCHES = 0.8
CELL_HEIGHT_INCHES = 0.38
PANEL_MARGIN_INCHES = (1.5, 1.6)  # width, height around the cells: tick labels, axis label, title
MIN_PANEL_HEIGHT_INCHES = 3.0


def grid_shape(count: int, panel_width: float) -> tuple[int, int]:
    """(rows, columns) for `count` panels: at most MAX_COLUMNS and MAX_WIDTH_INCHES wide, rows
    filled evenly (four panels are 2 x 2, five are 2 x 3)."""
    widest = max(1, min(MAX_COLUMNS, int(MAX_WIDTH_INCHES // panel_width)))
    rows = math.ceil(count / widest)
    return rows, math.ceil(count / rows)


def overall_accuracy(run: PasskeyGridRun) -> str:
    """The line `plot-passkey` prints per run."""
    return f"overall passkey accuracy {run.overall:.3f}"


def draw_for_command(runs: list[PasskeyGridRun], output: str | Path, args) -> Path:
    """`plot-passkey`'s figure, from its parsed arguments."""
    return plot_passkey_grids(runs, output, title=args.title)


def plot_passkey_grids(runs: list[PasskeyGridRun], output: str | Path, title: str | None = None) -> Path:
    """One heatmap panel per run in a grid, sharing one colour scale; format by `output`'s suffix."""
    check_output(output)
    plt = pyplot()
    import numpy as np

    names, shared = legend_labels([r.model or r.label for r in runs], [r.variant or r.label for r in runs])
    if len(runs) == 1:
        names = [runs[0].label]
    panel_width = PANEL_MARGIN_INCHES[0] + CELL_WIDTH_INCHES * max(len(r.lengths) for r in runs)
    panel_height = max(
        MIN_PANEL_HEIGHT_INCHES, PANEL_MARGIN_INCHES[1] + CELL_HEIGHT_INCHES * max(len(r.depths) for r in runs)
    )
    rows, columns = grid_shape(len(runs), panel_width)
    fig, axes = plt.subplots(
        rows, columns, figsize=(1.0 + panel_width * columns, panel_height * rows), squeeze=False, layout="constrained"
    )
    panels = list(axes.flat)
    for unused in panels[len(runs) :]:
        unused.remove()
    image = None
    for index, (ax, run, name) in enumerate(zip(panels, runs, names)):
        values = np.array([[np.nan if v is None else v for v in row] for row in run.accuracy], dtype=float)
        image = ax.imshow(np.ma.masked_invalid(values), cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(len(run.lengths)), [str(length) for length in run.lengths])
        ax.set_yticks(range(len(run.depths)), [f"{depth}%" for depth in run.depths])
        ax.set_xlabel(f"prompt length ({run.length_unit})")
        if index % columns == 0:
            ax.set_ylabel("key depth")
        ax.set_title(wrap(f"{name}\noverall {run.overall:.2f}", panel_width, fontsize_scale=0.8), fontsize=9)
        for (row, col), value in np.ndenumerate(values):
            if not np.isnan(value):
                ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=panels[: len(runs)], label="passkey accuracy")
    heading = title or (f"Passkey retrieval: {shared}" if shared and len(runs) > 1 else None)
    if heading:
        fig.suptitle(wrap(heading, panel_width * columns))
    return save_figure(fig, output)
