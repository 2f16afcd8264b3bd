"""`lm-eval-longmem plot-passkey`: passkey accuracy as a length x depth heatmap per run."""

from __future__ import annotations

from lm_eval_longmem.cli.figure_arguments import draw_figure, figure_parser

HELP = "draw longmem_passkey accuracy heatmaps (length x depth) from lm-eval results"


def main(argv: list[str]) -> int:
    parser = figure_parser("plot-passkey", HELP, "passkey.png")
    args = parser.parse_args(argv)

    from lm_eval_longmem.report.passkey_plot import plot_passkey_grids
    from lm_eval_longmem.report.results_files import passkey_grid_from

    return draw_figure(
        args, "longmem_passkey",
        draw=lambda runs, output: plot_passkey_grids(runs, output, title=args.title),
        describe=lambda run: f"overall passkey accuracy {run.overall:.3f}",
        reader=passkey_grid_from,
    )
