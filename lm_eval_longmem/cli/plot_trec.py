"""`lm-eval-longmem plot-trec`: many-shot TREC accuracy against the number of shots, one line per run."""

from __future__ import annotations

from lm_eval_longmem.cli.figure_arguments import draw_figure, figure_parser

HELP = "draw longmem_trec_manyshot accuracy vs number of shots (one line per run) from lm-eval results"


def main(argv: list[str]) -> int:
    parser = figure_parser("plot-trec", HELP, "trec_manyshot.png")
    args = parser.parse_args(argv)

    from lm_eval_longmem.report.trec_plot import TASK, plot_trec_accuracy, trec_points

    def describe(run) -> str:
        points = trec_points(run)
        return ", ".join(f"{shots}: {acc:.3f}" for shots, (acc, _) in points.items()) or "no per-shot metrics"

    return draw_figure(args, TASK, draw=lambda runs, output: plot_trec_accuracy(runs, output, title=args.title),
                       describe=describe)
