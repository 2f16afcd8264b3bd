"""Passkey heatmaps: accuracy per (length, depth) cell, one panel per run.

Depth on the y axis (0 % at the top, where the key follows the task line), length on the x
axis, green for found and red for missed, each cell annotated; cells without documents are
left blank.
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_longmem.report.results_files import PasskeyGridRun


def plot_passkey_grids(runs: list[PasskeyGridRun], output: str | Path, title: str | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    panel_width = 1.5 + 0.8 * max(len(r.lengths) for r in runs)
    fig, axes = plt.subplots(
        1, len(runs), figsize=(1.0 + panel_width * len(runs), 4.2), squeeze=False, layout="constrained"
    )
    image = None
    for index, (ax, run) in enumerate(zip(axes[0], runs)):
        values = np.array([[np.nan if v is None else v for v in row] for row in run.accuracy], dtype=float)
        image = ax.imshow(np.ma.masked_invalid(values), cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto")
        ax.set_xticks(range(len(run.lengths)), [str(length) for length in run.lengths])
        ax.set_yticks(range(len(run.depths)), [f"{depth}%" for depth in run.depths])
        ax.set_xlabel(f"prompt length ({run.length_unit})")
        if index == 0:
            ax.set_ylabel("key depth")
        ax.set_title(f"{run.label}\noverall {run.overall:.2f}", fontsize=9)
        for (row, col), value in np.ndenumerate(values):
            if not np.isnan(value):
                ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=axes[0].tolist(), label="passkey accuracy")
    if title:
        fig.suptitle(title)
    output = Path(output)
    fig.savefig(output, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return output
