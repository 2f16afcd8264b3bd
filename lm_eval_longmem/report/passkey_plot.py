"""Passkey heatmaps: accuracy per (length, depth) cell, one panel per run.

Depth on the y axis (0 % at the top, where the key follows the task line), length on the x
axis, green for found and red for missed, each cell annotated; cells without documents are
left blank.
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_longmem.report.figures import check_output, legend_labels, pyplot, save_figure, wrap
from lm_eval_longmem.report.results_files import PasskeyGridRun


def plot_passkey_grids(runs: list[PasskeyGridRun], output: str | Path, title: str | None = None) -> Path:
    """One heatmap panel per run, side by side, sharing one colour scale; format by `output`'s suffix."""
    check_output(output)
    plt = pyplot()
    import numpy as np

    names, shared = legend_labels([r.model or r.label for r in runs], [r.variant or r.label for r in runs])
    if len(runs) == 1:
        names = [runs[0].label]
    panel_width = 1.5 + 0.8 * max(len(r.lengths) for r in runs)
    fig, axes = plt.subplots(
        1, len(runs), figsize=(1.0 + panel_width * len(runs), 4.2), squeeze=False, layout="constrained"
    )
    image = None
    for index, (ax, run, name) in enumerate(zip(axes[0], runs, names)):
        values = np.array([[np.nan if v is None else v for v in row] for row in run.accuracy], dtype=float)
        image = ax.imshow(np.ma.masked_invalid(values), cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(len(run.lengths)), [str(length) for length in run.lengths])
        ax.set_yticks(range(len(run.depths)), [f"{depth}%" for depth in run.depths])
        ax.set_xlabel(f"prompt length ({run.length_unit})")
        if index == 0:
            ax.set_ylabel("key depth")
        ax.set_title(wrap(f"{name}\noverall {run.overall:.2f}", panel_width, fontsize_scale=0.8), fontsize=9)
        for (row, col), value in np.ndenumerate(values):
            if not np.isnan(value):
                ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=axes[0].tolist(), label="passkey accuracy")
    heading = title or (f"Passkey retrieval: {shared}" if shared and len(runs) > 1 else None)
    if heading:
        fig.suptitle(wrap(heading, panel_width * len(runs)))
    return save_figure(fig, output)
