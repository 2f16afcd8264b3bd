"""Draw forgetting curves the way the paper's Figure 1 does.

Copy accuracy (orange) and LM accuracy (blue) against the length L, with ±std bands and
the three memory regions shaded: green where the model copies almost perfectly
(fine-grained), blue where copying still beats plain language modelling (coarse-grained),
red where the prefix no longer helps (amnesia).

The two curves are often equal (both at 1 for very short L, both at the LM level in amnesia),
so neither may hide the other: the copy line is solid with dots and drawn on top, the LM line
dashed with larger hollow squares that stay visible around the dots. The length axis is
logarithmic when the lengths are log-spaced (`figures.LOG_AXIS_RULE`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lm_eval_longmem.report.figures import (
    check_output,
    clipped_band,
    legend_labels,
    legend_outside,
    log2_axis,
    log_spaced,
    pyplot,
    run_colors,
    save_figure,
    wrap,
)
from lm_eval_longmem.report.results_files import CurveRun
from lm_eval_longmem.tasks.forgetting_curve.declaration import DECLARATION
from lm_eval_longmem.tasks.forgetting_curve.headlines import exact_copy_length
from lm_eval_longmem.tasks.headlines import length_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

COPY_COLOR = "tab:orange"
LM_COLOR = "tab:blue"
REGION_COLORS = {"fine-grained": "green", "coarse-grained": "blue", "amnesia": "red"}
REGION_LEGEND = {
    "fine-grained": "fine-grained memory",
    "coarse-grained": "coarse-grained memory",
    "amnesia": "amnesia",
}
# Copy on top, solid with dots; LM below, dashed with hollow squares that frame the dots.
COPY_STYLE = dict(linestyle="-", marker="o", markersize=3.5, linewidth=1.4, zorder=3)
LM_STYLE = dict(linestyle="--", marker="s", markersize=6.5, markerfacecolor="none", linewidth=1.1, zorder=2.5)
# Training-length markers are drawn up to this multiple of the longest tested length.
MARK_SPAN = 2


def memory_regions(run: CurveRun) -> list[tuple[str, float, float]]:
    """The (name, x_start, x_end) spans to shade, clipped to the tested lengths."""
    if run.mode == "reduced" or not run.points:
        return []
    lengths = [point["length"] for point in run.points]
    x_min, x_max = min(lengths), max(lengths)
    fine = run.fine_memory_length or 0
    coarse = run.coarse_memory_length or 0
    regions: list[tuple[str, float, float]] = []
    if fine > 0:
        regions.append(("fine-grained", x_min, fine))
    if coarse > fine:
        regions.append(("coarse-grained", max(fine, x_min), coarse))
    amnesia_start = max(coarse, fine, x_min)
    if amnesia_start < x_max:
        regions.append(("amnesia", amnesia_start, x_max))
    return regions


def memory_summary(run: CurveRun) -> str:
    """E.g. "fine 1024, coarse >4094"; ">" marks a length that is only a lower bound (spelled as
    the leaderboard spells it). A reduced curve (`--model hf`) has its exact-copy length instead."""
    if run.mode == "reduced":
        found = exact_copy_length({"points": list(run.points)}, DECLARATION.name)
        if not found:
            return "reduced metric, no memory lengths"
        return f"reduced metric: exact copy {length_text(found[0].value, found[0].lower_bound)}, no memory lengths"

    def describe(length: int | None, is_lower_bound: bool) -> str:
        return "n/a" if length is None else length_text(length, is_lower_bound)

    fine = describe(run.fine_memory_length, run.fine_is_lower_bound)
    coarse = describe(run.coarse_memory_length, run.coarse_is_lower_bound)
    return f"fine {fine}, coarse {coarse}"


def draw_for_command(runs: list[CurveRun], output: str | Path, args) -> Path:
    """`plot`'s figure, from its parsed arguments."""
    return plot_forgetting_curves(
        runs, output, training_length=args.training_length, title=args.title, log_x=args.log_x, overlay=args.overlay
    )


def plot_forgetting_curves(
    runs: list[CurveRun],
    output: str | Path,
    training_length: int | None = None,
    title: str | None = None,
    log_x: bool | None = None,
    overlay: bool = False,
) -> Path:
    """Save one run as a Figure-1-style plot, or several as stacked panels (PNG, PDF or SVG by suffix).

    `overlay=True` draws all runs on one axes instead: each run's copy accuracy (solid, with
    its band) and LM accuracy (dashed) in the run's colour, memory lengths in the legend.
    `training_length` overrides each run's own; `log_x=None` picks a log axis when the
    tested lengths are log-spaced (`figures.log_spaced`).
    """
    if not runs:
        raise ValueError("plot_forgetting_curves needs at least one run")
    check_output(output)
    plt = pyplot()

    if log_x is None:
        log_x = log_spaced([point["length"] for run in runs for point in run.points])
    if overlay:
        return _plot_overlay(runs, output, training_length, title, log_x)

    width = 9
    height = 4.5 if len(runs) == 1 else 3.2 * len(runs)
    fig, axes = plt.subplots(len(runs), 1, sharex=True, sharey=True, squeeze=False, figsize=(width, height))
    for run, ax in zip(runs, axes[:, 0]):
        _draw_run(ax, run, run.training_length if training_length is None else training_length)
        if log_x:
            log2_axis(ax)
    axes[-1, 0].set_xlabel("length L (tokens of the copied text)")
    # The axes span about two thirds of the figure; the legend sits to their right.
    if len(runs) == 1:
        run = runs[0]
        axes[0, 0].set_title(wrap(f"{title or run.label}\n{memory_summary(run)}", width * 0.65), fontsize="medium")
    else:
        for run, ax in zip(runs, axes[:, 0]):
            ax.set_title(wrap(f"{run.label} — {memory_summary(run)}", width * 0.65), fontsize="medium")
        fig.suptitle(wrap(title or "Forgetting curves", width))
    fig.tight_layout()
    return save_figure(fig, output)


def _plot_overlay(
    runs: list[CurveRun], output: str | Path, training_length: int | None, title: str | None, log_x: bool
) -> Path:
    plt = pyplot()
    width = 10
    fig, ax = plt.subplots(figsize=(width, 5))
    labels, shared = legend_labels([run.model or run.label for run in runs], [run.variant or run.label for run in runs])
    for run, label, color in zip(runs, labels, run_colors(len(runs))):
        lengths = [point["length"] for point in run.points]
        if run.mode == "reduced":
            ax.plot(
                lengths,
                [p["copy_exact"] for p in run.points],
                color=color,
                **COPY_STYLE,
                label=f"{label}: copy exact ({memory_summary(run)})",
            )
            continue
        copy = [point["copy_mean"] for point in run.points]
        spread = [point["copy_std"] for point in run.points]
        ax.plot(lengths, copy, color=color, **COPY_STYLE, label=f"{label}: copy, {memory_summary(run)}")
        clipped_band(ax, lengths, [m - s for m, s in zip(copy, spread)], [m + s for m, s in zip(copy, spread)], color)
        ax.plot(lengths, [point["lm_mean"] for point in run.points], color=color, **LM_STYLE, label=f"{label}: LM")
    if training_length is None and len({run.training_length for run in runs}) == 1:
        training_length = runs[0].training_length  # marked only when every run shares it
    longest = max(point["length"] for run in runs for point in run.points)
    if training_length is not None and not _mark_or_mention(ax, training_length, longest):
        ax.axvline(
            training_length, color="red", linestyle="--", linewidth=1.2, label=f"training length = {training_length}"
        )
    if log_x:
        log2_axis(ax)
    ax.set_xlabel("length L (tokens of the copied text)")
    ax.set_ylabel("token accuracy (copy solid ●, LM dashed □; band ±std)")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    heading = title or (f"Forgetting curves of {shared}" if shared else "Forgetting curves")
    ax.set_title(wrap(heading, width * 0.6), fontsize="medium")
    legend_outside(ax)
    fig.tight_layout()
    return save_figure(fig, output)


def _draw_run(ax: Axes, run: CurveRun, training_length: int | None) -> None:
    """Curves, bands, regions and training-length marker of one run on one axes."""
    lengths = [point["length"] for point in run.points]
    for name, start, end in memory_regions(run):
        ax.axvspan(start, end, color=REGION_COLORS[name], alpha=0.08, label=REGION_LEGEND[name])

    if run.mode == "reduced":
        copy_exact = [point["copy_exact"] for point in run.points]
        lm_exact = [point["lm_exact"] for point in run.points]
        ax.plot(lengths, copy_exact, color=COPY_COLOR, **COPY_STYLE, label="copy (exact)")
        ax.plot(lengths, lm_exact, color=LM_COLOR, **LM_STYLE, label="LM (exact)")
        ax.set_ylabel("exact-copy rate (reduced metric)")
    else:
        _plot_with_band(ax, lengths, run.points, "copy", COPY_COLOR, "copy accuracy", COPY_STYLE)
        _plot_with_band(ax, lengths, run.points, "lm", LM_COLOR, "LM accuracy", LM_STYLE)
        ax.set_ylabel("token accuracy")

    if training_length is not None and not _mark_or_mention(ax, training_length, max(lengths)):
        ax.axvline(
            training_length,
            color="red",
            linestyle="--",
            linewidth=1.2,
            label=f"training length = {training_length}",
        )
        # A copy sequence holds L twice, so L = training length / 2 is the longest copy
        # target whose sequence stays inside the training context (the reference marks it too).
        ax.axvline(
            training_length // 2,
            color="green",
            linestyle=":",
            linewidth=1.2,
            label=f"training length / 2 = {training_length // 2}",
        )
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    legend_outside(ax)


def _mark_or_mention(ax: Axes, training_length: int, longest: int) -> bool:
    """Far beyond the tested lengths, a training-length line would squash every curve into
    the left edge: name it in the legend instead. True when it was only mentioned."""
    if training_length <= MARK_SPAN * longest:
        return False
    ax.plot([], [], " ", label=f"training length = {training_length} (beyond the tested lengths)")
    return True


def _plot_with_band(
    ax: Axes, lengths: list[int], points: tuple[dict, ...], key: str, color: str, label: str, style: dict
) -> None:
    """A mean curve with a translucent ±std band; `key` is "copy" or "lm"."""
    means = [point[f"{key}_mean"] for point in points]
    stds = [point[f"{key}_std"] for point in points]
    lower = [mean - std for mean, std in zip(means, stds)]
    upper = [mean + std for mean, std in zip(means, stds)]
    ax.plot(lengths, means, color=color, **style, label=label)
    clipped_band(ax, lengths, lower, upper, color)  # accuracies: the band stays inside [0, 1]
