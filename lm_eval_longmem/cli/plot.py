"""`lm-eval-longmem plot`: forgetting curves of one or more runs on one figure."""

from __future__ import annotations

from lm_eval_longmem.cli.figure_arguments import draw_figure, figure_parser

HELP = "draw forgetting curves (copy vs LM accuracy, memory regions) from lm-eval results"


def main(argv: list[str]) -> int:
    from lm_eval_longmem.report.figures import LOG_AXIS_RULE  # light: matplotlib is imported only to draw

    parser = figure_parser("plot", HELP, "forgetting_curve.png")
    parser.add_argument("--training-length", type=int, default=None, help="override the marked training length")
    parser.add_argument("--overlay", action="store_true", help="all runs on one axes (default: one panel per run)")
    parser.add_argument("--log-x", dest="log_x", action="store_true", default=None,
                        help=f"log-scale length axis (default: {LOG_AXIS_RULE})")
    parser.add_argument("--linear-x", dest="log_x", action="store_false", help="linear length axis")
    args = parser.parse_args(argv)

    from lm_eval_longmem.report.forgetting_curve_plot import memory_summary, plot_forgetting_curves
    from lm_eval_longmem.report.results_files import curve_run_from

    def draw(runs, output):
        return plot_forgetting_curves(runs, output, training_length=args.training_length, title=args.title,
                                      log_x=args.log_x, overlay=args.overlay)

    # The line printed per run is the one in its figure title (">L" where only a lower bound).
    return draw_figure(args, "forgetting_curve", draw=draw, describe=memory_summary, reader=curve_run_from)
