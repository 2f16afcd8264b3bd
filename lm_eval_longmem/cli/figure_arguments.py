"""Every figure subcommand (`plot`, `plot-passkey`, ...), built from the `Figure` its task
declares (tasks/<task>/declaration.py): its arguments (results to read, the output file, a
title, and the task's own), and its course (check the output, find the runs, draw, say one
line per run)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def figure_subcommands() -> dict[str, FigureSubcommand]:
    """subcommand name -> the subcommand, for every task that declares a figure."""
    from lm_eval_longmem.tasks import registry

    return {d.figure.subcommand: FigureSubcommand(d) for d in registry.declarations() if d.figure is not None}


class FigureSubcommand:
    """A subcommand as `cli/__init__.py` runs one: `HELP` (one line) and `main(argv)`."""

    def __init__(self, declaration):
        self.declaration = declaration
        self.figure = declaration.figure
        self.HELP = self.figure.help

    def main(self, argv: list[str]) -> int:
        from lm_eval_longmem.tasks.declaration import import_object

        figure = self.figure
        parser = figure_parser(figure.subcommand, figure.help, figure.default_output)
        for argument in figure.arguments:
            parser.add_argument(*argument.flags, **argument.settings)
        args = parser.parse_args(argv)
        refuse_opposite_flags(parser, figure.arguments, argv)

        draw, describe = import_object(figure.draw), import_object(figure.describe)
        task = self.declaration.name
        reader = None
        if figure.reader is not None:
            read = import_object(figure.reader)

            def reader(data, source):
                return read(data, source, task)

        return draw_figure(
            args, task, draw=lambda runs, output: draw(runs, output, args), describe=describe, reader=reader
        )


def refuse_opposite_flags(parser: argparse.ArgumentParser, arguments, argv: list[str]) -> None:
    """Options that write one setting (`--log-x`, `--linear-x`) given together: argparse keeps the
    last without a word. (A mutually exclusive group would say it, but Python 3.11's argparse
    fails formatting the usage line of these parsers with one.)"""
    by_dest: dict[str, list[str]] = {}
    for argument in arguments:
        dest = argument.settings.get("dest")
        if dest is not None:
            by_dest.setdefault(dest, []).extend(flag for flag in argument.flags if flag in argv)
    for given in by_dest.values():
        if len(set(given)) > 1:
            parser.error(f"argument {given[-1]}: not allowed with argument {given[0]}")


def figure_parser(subcommand: str, help_line: str, default_output: str) -> argparse.ArgumentParser:
    """A parser with RESULTS..., -o and --title; a subcommand adds only its own options."""
    parser = argparse.ArgumentParser(
        prog=f"lm-eval-longmem {subcommand}", description=help_line[0].upper() + help_line[1:] + "."
    )
    parser.add_argument(
        "results", nargs="+", help="results_*.json files, or folders searched recursively (newest file per run)"
    )
    parser.add_argument("-o", "--output", default=default_output, help="figure to write; .png, .pdf or .svg")
    parser.add_argument("--title", default=None)
    return parser


def draw_figure(
    args: argparse.Namespace,
    task: str,
    draw: Callable[[list, str], Any],
    describe: Callable[[Any], str],
    reader: Callable | None = None,
) -> int:
    """Refuse a bad output suffix before reading anything, take the newest run of each identity
    that has `task` (read by `reader` when given; unreadable runs are skipped with a warning),
    draw them with `draw(runs, output)`, and print `describe(run)` per run and the file written."""
    from lm_eval_longmem.report.discovery import read_each, runs_with_task
    from lm_eval_longmem.report.figures import check_output

    check_output(args.output)
    runs = runs_with_task(args.results, task)
    if reader is not None:
        runs = read_each(runs, reader)
    out = draw(runs, args.output)
    for run in runs:
        print(f"{run.label}: {describe(run)}  ({run.source})")
    print(f"wrote {out}")
    return 0
