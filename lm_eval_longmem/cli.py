"""`lm-eval-longmem`: lm-eval's own CLI with our plugins registered, plus our subcommands.

    lm-eval-longmem plot RESULTS [RESULTS ...] -o curve.png   # forgetting-curve figure
    lm-eval-longmem plot-passkey RESULTS [...] -o passkey.png # passkey length x depth heatmap
    lm-eval-longmem methods                                   # methods and their arguments
    lm-eval-longmem train RECIPE [key=value ...]              # training module (train --help)
    lm-eval-longmem <anything else>                           # exactly `lm_eval <anything else>`

Use it where start-up hooks are disabled (python -S, some sandboxes, zipapps).
"""

from __future__ import annotations

import argparse
import sys


def _plot(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-longmem plot",
        description="Draw forgetting curves (copy vs LM accuracy, memory regions) from lm-eval results.",
    )
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


def _plot_passkey(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-longmem plot-passkey",
        description="Draw longmem_passkey accuracy heatmaps (length x depth) from lm-eval results.",
    )
    parser.add_argument("results", nargs="+", help="results_*.json files, or --output_path folders (latest file)")
    parser.add_argument("-o", "--output", default="passkey.png", help="PNG to write")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)

    from lm_eval_longmem.report.passkey_plot import plot_passkey_grids
    from lm_eval_longmem.report.results_files import load_passkey_grid

    runs = [load_passkey_grid(path) for path in args.results]
    out = plot_passkey_grids(runs, args.output, title=args.title)
    for run in runs:
        print(f"{run.label}: overall passkey accuracy {run.overall:.3f}  ({run.source})")
    print(f"wrote {out}")
    return 0


def _methods(_argv: list[str]) -> int:
    from lm_eval_longmem.models.methods import method_listing

    print("Methods for --model longmem (--model_args method=NAME,arg=value,...):")
    print(method_listing())
    return 0


def _train(argv: list[str]) -> int:
    from lm_eval_longmem_training.cli import main as train_main

    return train_main(argv)


SUBCOMMANDS = {"plot": _plot, "plot-passkey": _plot_passkey, "methods": _methods, "train": _train}


def main(argv: list[str] | None = None) -> int:
    from lm_eval_longmem.errors import install_concise_excepthook

    install_concise_excepthook()  # our errors print as one message, not a traceback
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]](argv[1:])

    import lm_eval_longmem
    from lm_eval.__main__ import cli_evaluate

    lm_eval_longmem.register()
    sys.argv = ["lm-eval", *argv]
    cli_evaluate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
