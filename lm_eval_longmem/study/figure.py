"""Figure 2 of the study: perplexity against each downstream score, one point per method, one
panel per score, each titled with Kendall's tau and its p-value.

Each method keeps one colour in every panel and is named in the legend beside the last panel
(labels written next to points collide when methods score alike); where the score is a mean
over samples its 95% interval is a vertical bar; exact-attention methods are filled circles,
the others hollow squares, as the study separates them. The perplexity axis is logarithmic,
with plain numbers, when the values span more than a factor of ten (a failing method's
perplexity is often orders larger).
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_longmem.report.figures import legend_outside, pyplot, run_colors, save_figure
from lm_eval_longmem.study.scores import RowScores
from lm_eval_longmem.study.suite import COLUMNS
from lm_eval_longmem.study.tables import DOWNSTREAM

PERCENT = ("needle", "mshots", "ruler")  # accuracies in percent: the whole scale, so panels compare


def draw_figure2(rows: list[RowScores], correlations: dict[str, dict], output: Path) -> Path | None:
    """The PNG, or None when the study has no perplexity or no downstream column."""
    panels = [c for c in DOWNSTREAM if c in correlations]
    if not panels:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 1.8, 4.2), squeeze=False)
    colors = dict(zip([r.label for r in rows], run_colors(len(rows))))
    for ax, column in zip(axes[0], panels):
        spread = [r.ppl.value for r in rows if r.ppl.value]
        for row in rows:
            score = getattr(row, column)
            if row.ppl.value is None or score.value is None:
                continue
            error = None
            if score.low is not None and score.high is not None:
                error = [[max(0.0, score.value - score.low)], [max(0.0, score.high - score.value)]]
            exact = row.exact is not False
            ax.errorbar(
                row.ppl.value,
                score.value,
                yerr=error,
                fmt="o" if exact else "s",
                color=colors[row.label],
                markerfacecolor=colors[row.label] if exact else "white",
                markersize=7,
                capsize=3,
                label=row.label,
            )
        if spread and max(spread) / min(spread) > 10:
            from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

            ax.set_xscale("log")
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
        stats = correlations[column]
        title = COLUMNS[column].title
        if stats["tau"] is None:
            title += f"\ntau: {stats['why']}"
        else:
            title += f"\nKendall tau = {stats['tau']:.2f} (p = {stats['p_value']:.3f}, {stats['n']} methods)"
        ax.set_title(title, fontsize=9.5)
        if column in PERCENT:
            ax.set_ylim(-3, 103)
        ax.set_xlabel("perplexity at the longest length (lower is better)")
        ax.set_ylabel(f"{COLUMNS[column].title} (higher is better)")
        ax.grid(alpha=0.3)
    legend_outside(axes[0][-1], title="method")
    fig.suptitle("Perplexity against downstream scores (filled: exact attention)", fontsize=11)
    fig.tight_layout()
    return save_figure(fig, output)
