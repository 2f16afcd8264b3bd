"""`lm-eval-longmem plot-passkey`: passkey accuracy as a length x depth heatmap per run."""

from __future__ import annotations

import argparse

HELP = "draw longmem_passkey accuracy heatmaps (length x depth) from lm-eval results"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lm-eval-longmem plot-passkey", description=HELP[0].upper() + HELP[1:] + ".")
    parser.add_argument("results", nargs="+", help="results_*.json files, or folders searched recursively (newest file per run)")
    parser.add_argument("-o", "--output", default="passkey.png", help="figure to write; .png, .pdf or .svg")
    parser.add_argument("--title", default=None)
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
