"""BookSum: overall Rouge against the input budget, one line per run (the Infini-attention
paper's Figure 4).

The paper reads its result this way: with more of the book given, the summary should get
better, for a memory that keeps what it read. The budget axis is logarithmic (16K to 500K
tokens in the paper). Overall Rouge is a geometric mean of three corpus means, so lm-eval
records no standard error for it and the lines carry no band. A point where the model's
context cut some books is drawn hollow: the model read less than the budget says.
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_longmem.report.figures import (
    Series,
    check_output,
    draw_series,
    legend_labels,
    legend_outside,
    log2_axis,
    pyplot,
    run_colors,
    runs_with_points,
    save_figure,
    wrap,
)
from lm_eval_longmem.report.runs import RunInfo, short_model_name
from lm_eval_longmem.tasks.booksum.declaration import DECLARATION
from lm_eval_longmem.tasks.headlines import bucketed

TASK = DECLARATION.name


def booksum_points(run: RunInfo, task: str = TASK) -> dict[int, float]:
    """{budget: overall Rouge x 100} of one run."""
    return {budget: value for budget, (value, _) in bucketed(run.data["results"].get(task, {}), "overall@len").items()}


def cut_budgets(run: RunInfo, task: str = TASK) -> set[int]:
    """The budgets at which the model's context cut at least one book."""
    cut = bucketed(run.data["results"].get(task, {}), "cut_books@len")
    return {budget for budget, (count, _) in cut.items() if count}


def overall_by_budget(run: RunInfo) -> str:
    """The line `plot-booksum` prints per run: overall Rouge per budget, and where books were cut."""
    points, cut = booksum_points(run), cut_budgets(run)
    text = ", ".join(f"{budget}: {value:.1f}{' (cut)' if budget in cut else ''}" for budget, value in points.items())
    return text or "no per-budget metrics"


def draw_for_command(runs: list[RunInfo], output: str | Path, args) -> Path:
    """`plot-booksum`'s figure, from its parsed arguments."""
    return plot_booksum_rouge(runs, output, title=args.title)


def plot_booksum_rouge(runs: list[RunInfo], output: str | Path, title: str | None = None) -> Path:
    check_output(output)
    plt = pyplot()
    drawn = runs_with_points(runs, booksum_points, f"per-budget BookSum Rouge (overall@len<N> metrics of {TASK})")
    labels, shared = legend_labels([short_model_name(r.model) for r, _ in drawn], [r.variant for r, _ in drawn])
    series = [Series(label, tuple(points), tuple(points.values())) for (_, points), label in zip(drawn, labels)]
    colors = run_colors(len(series))
    width = 9
    fig, ax = plt.subplots(figsize=(width, 4.8))
    draw_series(ax, series, colors)
    for (run, points), color in zip(drawn, colors):
        cut = sorted(cut_budgets(run) & set(points))
        if cut:
            ax.scatter(cut, [points[b] for b in cut], s=60, facecolors="white", edgecolors=[color], zorder=3)
    budgets = [b for line in series for b in line.x]
    if max(budgets) >= 4 * max(1, min(budgets)):
        log2_axis(ax)
    ax.set_xlabel("input budget (first N tokens of each book)")
    ax.set_ylabel("overall Rouge (x100; hollow: context cut books)")
    ax.grid(True, alpha=0.3)
    heading = title or ("BookSum" + (f": {shared}" if shared else ""))
    ax.set_title(wrap(heading, width * 0.6), fontsize="medium")
    legend_outside(ax)
    fig.tight_layout()
    return save_figure(fig, output)
