"""`lm-eval-longmem plot-perplexity`: perplexity vs length per run, and the per-position loss curve."""

from __future__ import annotations

from lm_eval_longmem.cli.figure_arguments import draw_figure, figure_parser

HELP = "draw longmem_perplexity perplexity vs length (and loss by position) from lm-eval results"


def main(argv: list[str]) -> int:
    parser = figure_parser("plot-perplexity", HELP, "perplexity.png")
    args = parser.parse_args(argv)

    from lm_eval_longmem.report.perplexity_plot import TASK, loss_curve, perplexity_points, plot_perplexity

    def describe(run) -> str:
        points = perplexity_points(run)
        summary = ", ".join(f"{length}: {ppl:.2f}" for length, (ppl, _) in points.items()) or "no per-length perplexity"
        curve = loss_curve(run)
        return summary + (f"; loss curve over {len(curve[0])} positions" if curve else "")

    return draw_figure(args, TASK, draw=lambda runs, output: plot_perplexity(runs, output, title=args.title),
                       describe=describe)
