"""`lm-eval-longmem plot-perplexity`: perplexity vs length per run, and the per-position loss curve."""

from __future__ import annotations

from lm_eval_longmem.cli.figure_arguments import figure_parser

HELP = "draw longmem_perplexity perplexity vs length (and loss by position) from lm-eval results"


def main(argv: list[str]) -> int:
    parser = figure_parser("plot-perplexity", HELP, "perplexity.png")
    args = parser.parse_args(argv)

    from lm_eval_longmem.report.discovery import runs_with_task
    from lm_eval_longmem.report.figures import check_output
    from lm_eval_longmem.report.perplexity_plot import TASK, loss_curve, perplexity_points, plot_perplexity

    check_output(args.output)
    runs = runs_with_task(args.results, TASK)
    out = plot_perplexity(runs, args.output, title=args.title)
    for run in runs:
        points = perplexity_points(run)
        summary = ", ".join(f"{length}: {ppl:.2f}" for length, (ppl, _) in points.items()) or "no per-length perplexity"
        curve = loss_curve(run)
        extra = f"; loss curve over {len(curve[0])} positions" if curve else ""
        print(f"{run.label}: {summary}{extra}  ({run.source})")
    print(f"wrote {out}")
    return 0
