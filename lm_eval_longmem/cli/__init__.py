"""`lm-eval-longmem`: lm-eval's own CLI with our plugins registered, plus our subcommands.

    lm-eval-longmem SUBCOMMAND [--help]          # one of subcommands() below
    lm-eval-longmem <anything else>              # exactly `lm_eval <anything else>`

Each subcommand is one module in this package exposing `HELP` (one line) and `main(argv)`, or
a figure a task declares (built by figure_arguments.py).
Use the pass-through where start-up hooks are disabled (python -S, some sandboxes, zipapps).
"""

from __future__ import annotations

import importlib
import sys

PROGRAM = "lm-eval-longmem"

# name -> module in this package; modules import only argparse at top level, so help is instant.
MODULE_SUBCOMMANDS = {
    "by-length": "by_length",
    "default-model": "default_model",
    "fetch-data": "fetch_data",
    "leaderboard": "leaderboard",
    "methods": "methods",
    "study": "study",
    "sweep": "sweep",
    "tasks": "tasks",
    "train": "train",
}


def subcommands() -> dict:
    """name -> subcommand (`HELP` and `main(argv)`), sorted: our modules, and one figure
    subcommand per task that declares a figure (cli/figure_arguments.py)."""
    from lm_eval_longmem.cli.figure_arguments import figure_subcommands

    found = {name: _module(name) for name in MODULE_SUBCOMMANDS} | figure_subcommands()
    return dict(sorted(found.items()))


def _module(name: str):
    return importlib.import_module(f"{__name__}.{MODULE_SUBCOMMANDS[name]}")


def find_subcommand(name: str):
    """The subcommand called `name` (importing only its module), or None."""
    from lm_eval_longmem.cli.figure_arguments import figure_subcommands

    return _module(name) if name in MODULE_SUBCOMMANDS else figure_subcommands().get(name)


def top_level_help() -> str:
    commands = subcommands()
    width = max(len(name) for name in commands)
    lines = [
        "usage: lm-eval-longmem SUBCOMMAND [options]   (each subcommand has --help)",
        "       lm-eval-longmem [lm_eval options]       (runs lm_eval with the longmem plugin registered)",
        "",
        "subcommands:",
    ]
    lines += [f"  {name:<{width}}  {command.HELP}" for name, command in commands.items()]
    lines += [
        "",
        "Anything else is handed to lm_eval unchanged, e.g.",
        "  lm-eval-longmem --model longmem --model_args method=statedclm --tasks forgetting_curve",
        "`lm_eval --help` lists lm_eval's own options.",
    ]
    return "\n".join(lines)


def lm_eval_commands() -> list[str] | None:
    """lm-eval's own subcommands (`run`, `ls`, `validate` in 0.4.13), read from its parser
    (None if a later lm-eval keeps them elsewhere: then lm-eval answers as it does)."""
    from lm_eval._cli import HarnessCLI

    choices = getattr(getattr(HarnessCLI(), "_subparsers", None), "choices", None)
    return list(choices) if choices else None


def unknown_subcommand_message(name: str, theirs: list[str]) -> str:
    """lm-eval would answer "invalid choice (choose from 'run', 'ls', 'validate')", hiding ours."""
    from lm_eval_longmem.common.suggestions import did_you_mean

    ours = list(subcommands())
    return (
        f"unknown subcommand '{name}'.{did_you_mean(name, ours + theirs)} Subcommands: {', '.join(ours)}; "
        f"lm_eval's own: {', '.join(theirs)} (arguments starting with - go to `lm_eval run`). "
        "`lm-eval-longmem --help` says what each does."
    )


def main(argv: list[str] | None = None) -> int:
    from lm_eval_longmem.errors import install_concise_excepthook

    install_concise_excepthook()  # our errors print as one message, not a traceback
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(top_level_help())
        return 0
    command = find_subcommand(argv[0])
    if command is not None:
        from lm_eval_longmem.errors import exit_2_for_usage_errors, exit_status_if_interrupted

        return exit_status_if_interrupted(lambda: exit_2_for_usage_errors(lambda: command.main(argv[1:]), PROGRAM))

    from lm_eval_longmem.harness.startup import watch_lm_eval

    watch_lm_eval()  # what the start-up hook does for `lm_eval`: model, tasks, folders, checks
    theirs = None if argv[0].startswith("-") else lm_eval_commands()
    if theirs and argv[0] not in theirs:
        from lm_eval_longmem.errors import UsageError, exit_for_usage_error

        exit_for_usage_error(UsageError(unknown_subcommand_message(argv[0], theirs)), PROGRAM)
    run_lm_eval(argv)
    return 0


def run_lm_eval(argv: list[str]) -> None:
    """lm-eval's CLI (`lm_eval.__main__.cli_evaluate`, whose three steps these are) on `argv`,
    its parsers renamed so that its messages name this command, not `lm-eval`."""
    from lm_eval._cli import HarnessCLI
    from lm_eval.utils import setup_logging

    setup_logging()
    sys.argv = [PROGRAM, *argv]
    cli = HarnessCLI()
    rename_parsers(cli._parser, "lm-eval", PROGRAM)
    cli.execute(cli.parse_args())


def rename_parsers(parser, old: str, new: str) -> None:
    """`parser` and its subcommands' parsers call themselves `new` in usage lines and errors
    (lm-eval 0.4.13 writes its name into each parser's `prog` and into `run`'s usage)."""
    import argparse

    parser.prog = new + parser.prog.removeprefix(old) if parser.prog.startswith(old) else parser.prog
    if parser.usage and parser.usage.startswith(old + " "):
        parser.usage = new + parser.usage.removeprefix(old)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                rename_parsers(subparser, old, new)


if __name__ == "__main__":
    sys.exit(main())
