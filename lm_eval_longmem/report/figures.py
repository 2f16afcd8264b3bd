"""What every comparison figure shares: matplotlib set-up, file format, titles, legends, bands.

Kept in one place so that all plots read the same way: the output format follows the `-o`
suffix (PNG, PDF or SVG), titles wrap instead of running off the figure, legends name the
method and the arguments the user chose (the model once, in the title, when all runs share
it), accuracy bands never leave [0, 1], and one run keeps one colour across panels.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lm_eval_longmem.common.atomic_files import atomic_write
from lm_eval_longmem.errors import LongMemError, UsageError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
DPI = 130
# Characters per inch of figure width at the default title size, a little conservative.
_CHARS_PER_INCH = 9.5
# Width given to a legend beside the axes before its entries wrap.
LEGEND_WIDTH_INCHES = 3.5


class FigureOutputError(LongMemError, ValueError):
    """The figure cannot be written as asked (unsupported suffix, matplotlib missing)."""


class FigureSuffixError(FigureOutputError, UsageError):
    """`-o` names a format no figure is written in (`x.jpgg`): a wrong command line (exit 2)."""


def check_output(output: str | Path) -> Path:
    """Validate the `-o` path before any work: its suffix picks the format."""
    output = Path(output)
    if output.suffix.lower() not in FORMATS:
        raise FigureSuffixError(
            f"Cannot write a figure to {output}: unsupported suffix {output.suffix or '(none)'!r}. "
            f"Use one of {', '.join(FORMATS)} (the suffix of -o picks the format)."
        )
    return output


def pyplot():
    """matplotlib's pyplot on the non-interactive backend (plots are written, never shown)."""
    try:
        import matplotlib
    except ImportError:
        raise FigureOutputError(
            "Plots need matplotlib, which is not installed: pip install 'lm-eval-longmem[plot]'"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Figure, output: str | Path) -> Path:
    output = check_output(output)
    with atomic_write(output) as handle:  # a plot killed while saving leaves no half image
        fig.savefig(handle, format=FORMATS[output.suffix.lower()], dpi=DPI, bbox_inches="tight")
    pyplot().close(fig)
    return output


def wrap(text: str, width_inches: float, fontsize_scale: float = 1.0) -> str:
    """Break `text` into lines that fit `width_inches` of figure (existing newlines are kept)."""
    columns = max(20, int(width_inches * _CHARS_PER_INCH / fontsize_scale))
    return "\n".join(
        textwrap.fill(line, columns, break_long_words=True, break_on_hyphens=False) or line for line in text.split("\n")
    )


def common_model(models: Sequence[str]) -> str | None:
    """The model all runs share, if they do (it then goes to the title, not every legend entry)."""
    return models[0] if models and all(model == models[0] for model in models) else None


def runs_with_points(runs, points_of, missing: str) -> list[tuple]:
    """(run, points) for each run that has any points; when none has, one error naming what is
    `missing` and the runs looked at (a plot of nothing helps no one)."""
    drawn = [(run, points_of(run)) for run in runs]
    drawn = [(run, points) for run, points in drawn if points]
    if not drawn:
        from lm_eval_longmem.errors import ResultsFileError

        raise ResultsFileError(f"No run has {missing}: " + ", ".join(str(run.source) for run in runs))
    return drawn


def legend_labels(models: Sequence[str], variants: Sequence[str]) -> tuple[list[str], str | None]:
    """Per-run legend text and the shared model (None when the runs differ in model).

    `variants` are "method (key=value, ...)" strings; with several models each entry keeps
    its model in front.
    """
    shared = common_model(list(models))
    if shared is not None:
        labels = list(variants)
    else:
        labels = [f"{model} · {variant}" for model, variant in zip(models, variants)]
    # Two runs that print the same must still be told apart.
    seen: dict[str, int] = {}
    unique = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if seen[label] == 1 else f"{label} [{seen[label]}]")
    return unique, shared


def run_colors(count: int) -> list:
    plt = pyplot()
    cmap = plt.get_cmap("tab10" if count <= 10 else "tab20")
    return [cmap(index % cmap.N) for index in range(count)]


def clipped_band(
    ax: Axes,
    x: Sequence[float],
    lower: Sequence[float],
    upper: Sequence[float],
    color,
    low: float | None = 0.0,
    high: float | None = 1.0,
    alpha: float = 0.15,
) -> None:
    """A translucent band between `lower` and `upper`, clipped to [low, high] (accuracies)."""
    clip_lower = [_clip(value, low, high) for value in lower]
    clip_upper = [_clip(value, low, high) for value in upper]
    ax.fill_between(x, clip_lower, clip_upper, color=color, alpha=alpha, linewidth=0)


def _clip(value: float, low: float | None, high: float | None) -> float:
    if math.isnan(value):
        return value
    if low is not None:
        value = max(low, value)
    if high is not None:
        value = min(high, value)
    return value


@dataclass(frozen=True)
class Series:
    """One run's line: y against x, with an optional band (`lower`/`upper`, same length)."""

    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    lower: tuple[float, ...] | None = None
    upper: tuple[float, ...] | None = None


Z95 = 1.96  # half-width of a normal 95% interval, in standard errors


def series_with_interval(label: str, points: dict[float, tuple[float, float | None]]) -> Series:
    """A line through {x: (value, stderr)} with its 95% band (no band where stderr is unknown)."""
    x = tuple(points)
    y = tuple(value for value, _ in points.values())
    half = tuple(Z95 * stderr if stderr is not None else 0.0 for _, stderr in points.values())
    return Series(label, x, y, tuple(v - h for v, h in zip(y, half)), tuple(v + h for v, h in zip(y, half)))


def draw_series(
    ax: Axes,
    series: Sequence[Series],
    colors: Sequence,
    band_limits: tuple[float | None, float | None] = (0.0, 1.0),
) -> None:
    """One line (with markers and its band) per run."""
    for line, color in zip(series, colors):
        ax.plot(line.x, line.y, "o-", color=color, markersize=3.5, linewidth=1.4, label=line.label)
        if line.lower is not None and line.upper is not None:
            clipped_band(ax, line.x, line.lower, line.upper, color, *band_limits)


def legend_outside(ax: Axes, title: str | None = None) -> None:
    """Legend to the right of the axes, so it never hides a curve; long entries wrap."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        labels = [wrap(label, LEGEND_WIDTH_INCHES, fontsize_scale=0.85) for label in labels]
        ax.legend(
            handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False, title=title
        )


# Lengths read best on a log axis when they span this factor or more (a linear axis would
# squash the short ones, where fine-grained memory lives, into one corner) ...
LOG_SPAN = 8
# ... or when each is a roughly constant factor above the previous one, larger than this
# (a geometric grid such as 8, 16, 32, 64: equally spaced only on a log axis).
LOG_STEP = 1.5
STEP_TOLERANCE = 1.25  # "roughly constant": the largest step at most this times the smallest
LOG_AXIS_RULE = (
    f"log when the lengths are log-spaced: they span {LOG_SPAN}x or more, or each is a roughly "
    f"constant factor > {LOG_STEP} above the previous; else linear"
)


def log_spaced(values: Sequence[float]) -> bool:
    """Whether `values` (lengths, shot counts) are log-spaced, by `LOG_AXIS_RULE`."""
    distinct = sorted({value for value in values if value > 0})
    if len(distinct) < 2:
        return False
    if distinct[-1] >= LOG_SPAN * distinct[0]:
        return True
    steps = [high / low for low, high in zip(distinct, distinct[1:])]
    return len(steps) >= 2 and min(steps) > LOG_STEP and max(steps) <= STEP_TOLERANCE * min(steps)


def log2_axis(ax: Axes, axis: str = "x") -> None:
    """Base-2 log scale (lengths and shot counts grow geometrically) with plain-number ticks."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    if axis == "x":
        ax.set_xscale("log", base=2)
        target = ax.xaxis
    else:
        ax.set_yscale("log", base=2)
        target = ax.yaxis
    target.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    target.set_minor_formatter(NullFormatter())
