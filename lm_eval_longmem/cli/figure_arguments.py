"""The arguments every figure subcommand shares: results to read, the output file, a title."""

from __future__ import annotations

import argparse


def figure_parser(subcommand: str, help_line: str, default_output: str) -> argparse.ArgumentParser:
    """A parser with RESULTS..., -o and --title; a subcommand adds only its own options."""
    parser = argparse.ArgumentParser(prog=f"lm-eval-longmem {subcommand}", description=help_line[0].upper() + help_line[1:] + ".")
    parser.add_argument("results", nargs="+", help="results_*.json files, or folders searched recursively (newest file per run)")
    parser.add_argument("-o", "--output", default=default_output, help="figure to write; .png, .pdf or .svg")
    parser.add_argument("--title", default=None)
    return parser
