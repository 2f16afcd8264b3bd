"""`lm-eval-longmem plot-passkey`: passkey accuracy as a length x depth heatmap per run."""

from __future__ import annotations

import argparse

HELP = "draw longmem_passkey accuracy heatmaps (length x depth) from lm-eval results"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lm-eval-longmem plot-passkey", description=HELP[0].upper() + HELP[1:] + ".")
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
