"""Many-shot TREC: accuracy against the number of demonstrations, one line per run.

The study this task follows (§7.5 of the context-extension study) reads its result this
way: accuracy should keep rising with more shots while the prompt still fits what the model
can use. The shot axis is logarithmic (1 to 1000 shots); the band is a 95% normal interval
from lm-eval's standard error, clipped to [0, 1], and absent where a shot count had a single
question (lm-eval records no stderr then).
"""

from __future__ import annotations

from pathlib import Path

from lm_eval_longmem.report.figures import (
    check_output,
    draw_series,
    legend_labels,
    legend_outside,
    log2_axis,
    pyplot,
    run_colors,
    runs_with_points,
    save_figure,
    series_with_interval,
    wrap,
)
from lm_eval_longmem.report.runs import RunInfo, short_model_name
from lm_eval_longmem.tasks.headlines import bucketed
from lm_eval_longmem.tasks.trec_manyshot.declaration import DECLARATION

TASK = DECLARATION.name


def trec_points(run: RunInfo, task: str = TASK) -> dict[int, tuple[float, float | None]]:
    """{shots: (accuracy, stderr)} of one run."""
    return bucketed(run.data["results"].get(task, {}), "acc@", "shots")


def accuracy_by_shots(run: RunInfo) -> str:
    """The line `plot-trec` prints per run: its accuracy per shot count."""
    points = trec_points(run)
    return ", ".join(f"{shots}: {acc:.3f}" for shots, (acc, _) in points.items()) or "no per-shot metrics"


def draw_for_command(runs: list[RunInfo], output: str | Path, args) -> Path:
    """`plot-trec`'s figure, from its parsed arguments."""
    return plot_trec_accuracy(runs, output, title=args.title)


def plot_trec_accuracy(runs: list[RunInfo], output: str | Path, title: str | None = None) -> Path:
    check_output(output)
    plt = pyplot()
    drawn = runs_with_points(runs, trec_points, f"per-shot TREC accuracies (acc@<N>shots metrics of {TASK})")
    labels, shared = legend_labels([short_model_name(r.model) for r, _ in drawn], [r.variant for r, _ in drawn])
    series = [series_with_interval(label, points) for (_, points), label in zip(drawn, labels)]
    width = 9
    fig, ax = plt.subplots(figsize=(width, 4.8))
    draw_series(ax, series, run_colors(len(series)))
    all_shots = [shot for line in series for shot in line.x]
    if max(all_shots) >= 4 * max(1, min(all_shots)):
        log2_axis(ax)
    ax.set_xlabel("demonstrations in the prompt (shots)")
    ax.set_ylabel("TREC accuracy (band: 95% interval)")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    heading = title or ("Many-shot TREC" + (f": {shared}" if shared else ""))
    ax.set_title(wrap(heading, width * 0.6), fontsize="medium")
    legend_outside(ax)
    fig.tight_layout()
    return save_figure(fig, output)
