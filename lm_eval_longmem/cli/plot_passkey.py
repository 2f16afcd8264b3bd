"""`lm-eval-longmem plot-passkey`: passkey accuracy as a length x depth heatmap per run."""

from __future__ import annotations

from lm_eval_longmem.cli.figure_arguments import figure_parser

HELP = "draw longmem_passkey accuracy heatmaps (length x depth) from lm-eval results"


def main(argv: list[str]) -> int:
    parser = figure_parser("plot-passkey", HELP, "passkey.png")
    args = parser.parse_args(argv)

    from lm_eval_longmem.report.discovery import read_each, runs_with_task
    from lm_eval_longmem.report.figures import check_output
    from lm_eval_longmem.report.passkey_plot import plot_passkey_grids
    from lm_eval_longmem.report.results_files import passkey_grid_from

    check_output(args.output)
    runs = read_each(runs_with_task(args.results, "longmem_passkey"), passkey_grid_from)
    out = plot_passkey_grids(runs, args.output, title=args.title)
    for run in runs:
        print(f"{run.label}: overall passkey accuracy {run.overall:.3f}  ({run.source})")
    print(f"wrote {out}")
    return 0
