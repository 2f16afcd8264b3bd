"""`lm-eval-longmem plot`: forgetting curves of one or more runs on one figure."""

from __future__ import annotations

from lm_eval_longmem.cli.figure_arguments import draw_figure, figure_parser

HELP = "draw forgetting curves (copy vs LM accuracy, memory regions) from lm-eval results"


def main(argv: list[str]) -> int:
    parser = figure_parser("plot", HELP, "forgetting_curve.png")
    parser.add_argument("--training-length", type=int, default=None, help="override the marked training length")
    parser.add_argument("--overlay", action="store_true", help="all runs on one axes (default: one panel per run)")
    parser.add_argument("--log-x", dest="log_x", action="store_true", default=None, help="log-scale length axis")
    parser.add_argument("--linear-x", dest="log_x", action="store_false", help="linear length axis")
    args = parser.parse_args(argv)

    from lm_eval_longmem.report.forgetting_curve_plot import plot_forgetting_curves
    from lm_eval_longmem.report.results_files import curve_run_from

    def describe(run) -> str:
        fine = "-" if run.fine_memory_length is None else run.fine_memory_length
        coarse = "-" if run.coarse_memory_length is None else run.coarse_memory_length
        return f"fine-grained {fine}, coarse-grained {coarse}"

    def draw(runs, output):
        return plot_forgetting_curves(runs, output, training_length=args.training_length, title=args.title,
                                      log_x=args.log_x, overlay=args.overlay)

    return draw_figure(args, "forgetting_curve", draw=draw, describe=describe, reader=curve_run_from)
