"""`lm-eval-longmem plot-trec`: many-shot TREC accuracy against the number of shots, one line per run."""

from __future__ import annotations

from lm_eval_longmem.cli.figure_arguments import figure_parser

HELP = "draw longmem_trec_manyshot accuracy vs number of shots (one line per run) from lm-eval results"


def main(argv: list[str]) -> int:
    parser = figure_parser("plot-trec", HELP, "trec_manyshot.png")
    args = parser.parse_args(argv)

    from lm_eval_longmem.report.discovery import runs_with_task
    from lm_eval_longmem.report.figures import check_output
    from lm_eval_longmem.report.trec_plot import TASK, plot_trec_accuracy, trec_points

    check_output(args.output)
    runs = runs_with_task(args.results, TASK)
    out = plot_trec_accuracy(runs, args.output, title=args.title)
    for run in runs:
        points = trec_points(run)
        summary = ", ".join(f"{shots}: {acc:.3f}" for shots, (acc, _) in points.items()) or "no per-shot metrics"
        print(f"{run.label}: {summary}  ({run.source})")
    print(f"wrote {out}")
    return 0
