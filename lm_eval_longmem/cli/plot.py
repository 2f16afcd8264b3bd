"""`lm-eval-longmem plot`: forgetting curves of one or more runs on one figure."""

from __future__ import annotations

import argparse

HELP = "draw forgetting curves (copy vs LM accuracy, memory regions) from lm-eval results"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lm-eval-longmem plot", description=HELP[0].upper() + HELP[1:] + ".")
    parser.add_argument("results", nargs="+", help="results_*.json files, or --output_path folders (latest file)")
    parser.add_argument("-o", "--output", default="forgetting_curve.png", help="PNG to write")
    parser.add_argument("--training-length", type=int, default=None, help="override the marked training length")
    parser.add_argument("--title", default=None)
    parser.add_argument("--log-x", dest="log_x", action="store_true", default=None, help="log-scale length axis")
    parser.add_argument("--linear-x", dest="log_x", action="store_false", help="linear length axis")
    args = parser.parse_args(argv)

    from lm_eval_longmem.report.forgetting_curve_plot import plot_forgetting_curves
    from lm_eval_longmem.report.results_files import find_results_file, load_curve_run

    runs = [load_curve_run(find_results_file(path)) for path in args.results]
    out = plot_forgetting_curves(runs, args.output, training_length=args.training_length, title=args.title, log_x=args.log_x)
    for run in runs:
        fine = "-" if run.fine_memory_length is None else run.fine_memory_length
        coarse = "-" if run.coarse_memory_length is None else run.coarse_memory_length
        print(f"{run.label}: fine-grained {fine}, coarse-grained {coarse}  ({run.source})")
    print(f"wrote {out}")
    return 0
