"""Perplexity against context length, one line per run, and the per-position loss curve.

`longmem_perplexity` reports `ppl@<length>` per evaluated length and, when it has them, an
aggregate `loss_curve` ({"positions": [...], "loss": [...]}): mean token loss by position in
the sequence. A method that uses its long context keeps lowering the loss at late positions;
one that has lost it flattens out (or rises beyond the training length). The second panel is
drawn only when some run has the curve. Perplexity has no natural upper bound, so its axis
is logarithmic when the values span more than a factor of 4.
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_longmem.errors import ResultsFileError
from lm_eval_longmem.report.figures import (
    LEGEND_WIDTH_INCHES,
    check_output,
    draw_series,
    legend_labels,
    log2_axis,
    pyplot,
    run_colors,
    save_figure,
    series_with_interval,
    wrap,
)
from lm_eval_longmem.report.runs import RunInfo, short_model_name
from lm_eval_longmem.tasks.headlines import PREFERRED_FILTER, bucketed
from lm_eval_longmem.tasks.perplexity.declaration import DECLARATION

TASK = DECLARATION.name


def perplexity_points(run: RunInfo, task: str = TASK) -> dict[int, tuple[float, float | None]]:
    """{length: (perplexity, stderr)} of one run."""
    return bucketed(run.data["results"].get(task, {}), "ppl@")


def loss_curve(run: RunInfo, task: str = TASK) -> tuple[list[float], list[float]] | None:
    """(positions, loss) when the run recorded a well-formed loss curve, else None."""
    curve = run.data["results"].get(task, {}).get(f"loss_curve,{PREFERRED_FILTER}")
    if not isinstance(curve, dict):
        return None
    positions, loss = curve.get("positions"), curve.get("loss")
    if not isinstance(positions, list) or not isinstance(loss, list) or len(positions) != len(loss) or not loss:
        return None
    pairs = [(p, v) for p, v in zip(positions, loss) if isinstance(p, (int, float)) and isinstance(v, (int, float))]
    return ([p for p, _ in pairs], [v for _, v in pairs]) if pairs else None


def perplexity_by_length(run: RunInfo) -> str:
    """The line `plot-perplexity` prints per run: perplexity per length, and the loss curve's size."""
    points = perplexity_points(run)
    summary = ", ".join(f"{length}: {ppl:.2f}" for length, (ppl, _) in points.items()) or "no per-length perplexity"
    curve = loss_curve(run)
    return summary + (f"; loss curve over {len(curve[0])} positions" if curve else "")


def draw_for_command(runs: list[RunInfo], output: str | Path, args) -> Path:
    """`plot-perplexity`'s figure, from its parsed arguments."""
    return plot_perplexity(runs, output, title=args.title)


def plot_perplexity(runs: list[RunInfo], output: str | Path, title: str | None = None) -> Path:
    check_output(output)
    plt = pyplot()
    rows = [(run, perplexity_points(run), loss_curve(run)) for run in runs]
    rows = [row for row in rows if row[1] or row[2]]
    if not rows:
        raise ResultsFileError(
            f"No run has perplexity per length (ppl@<L> metrics of {TASK}) or a loss curve: "
            + ", ".join(str(run.source) for run in runs)
        )
    labels, shared = legend_labels([short_model_name(r.model) for r, _, _ in rows], [r.variant for r, _, _ in rows])
    colors = run_colors(len(rows))
    with_curve = any(curve for _, _, curve in rows)
    with_ppl = any(points for _, points, _ in rows)
    panels = int(with_ppl) + int(with_curve)
    width = 6.5 * panels + 3
    fig, axes = plt.subplots(1, panels, figsize=(width, 4.8), squeeze=False)
    axes = list(axes[0])

    if with_ppl:
        ax = axes.pop(0)
        series, series_colors = [], []
        for (_, points, _), label, color in zip(rows, labels, colors):
            if not points:
                continue
            series.append(series_with_interval(label, points))
            series_colors.append(color)
        draw_series(ax, series, series_colors, band_limits=(1.0, None))  # perplexity >= 1
        lengths = [x for line in series for x in line.x]
        if max(lengths) >= 4 * min(lengths):
            log2_axis(ax)
        values = [y for line in series for y in line.y]
        if min(values) > 0 and max(values) > 4 * min(values):
            ax.set_yscale("log")
        ax.set_xlabel("context length (tokens)")
        ax.set_ylabel("perplexity (lower is better)")
        ax.grid(True, alpha=0.3)
        ax.set_title("perplexity by length", fontsize="medium")

    if with_curve:
        ax = axes.pop(0)
        for (_, _, curve), label, color in zip(rows, labels, colors):
            if curve:
                ax.plot(curve[0], curve[1], "-", color=color, linewidth=1.3, label=label)
        # Linear positions: the task bins positions in equal widths, and late positions are the point.
        ax.set_xlabel("position in the sequence (tokens)")
        ax.set_ylabel("mean token loss (nats)")
        ax.grid(True, alpha=0.3)
        ax.set_title("loss by position", fontsize="medium")

    # One legend for both panels, beside the last, listing every run (some lack one panel).
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=color, marker="o", markersize=3.5) for color in colors]
    ax.legend(
        handles,
        [wrap(label, LEGEND_WIDTH_INCHES, fontsize_scale=0.85) for label in labels],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize="small",
        frameon=False,
    )
    heading = title or ("Perplexity" + (f": {shared}" if shared else ""))
    fig.suptitle(wrap(heading, width * 0.8))
    fig.tight_layout()
    return save_figure(fig, output)
