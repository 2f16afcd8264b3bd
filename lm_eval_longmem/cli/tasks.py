"""`lm-eval-longmem tasks`: every task of ours with its `--metadata` options and the Hub
datasets it may need, as the tasks declare them (tasks/<task>/declaration.py)."""

from __future__ import annotations

import argparse

HELP = "list the longmem tasks with their --metadata options, defaults, help and the datasets they may need"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lm-eval-longmem tasks", description=HELP[0].upper() + HELP[1:] + ".")
    parser.add_argument("name", nargs="?", default=None, help="show only this task")
    args = parser.parse_args(argv)

    from lm_eval_longmem.errors import UsageError, exit_for_usage_error

    try:
        listing = task_listing(args.name)  # an unknown name fails before anything is printed
    except UsageError as error:  # one line, exit 2, as argparse answers
        exit_for_usage_error(error, parser.prog)
    print("Tasks of lm-eval-longmem (--tasks NAME; options: --metadata OPTION=value,...):")
    print(listing)
    return 0


def task_listing(only: str | None = None) -> str:
    """Each task with its summary, its options (as `methods` lists a method's arguments) and
    the datasets it may need (with the option that replaces each by a local copy)."""
    from lm_eval_longmem.models.method_framework.arguments import describe_fields
    from lm_eval_longmem.tasks import registry

    declarations = registry.declarations() if only is None else (_find(only),)
    lines = []
    for declaration in declarations:
        lines.append(f"  {declaration.name}: {declaration.summary}")
        if declaration.options is not None:
            prefix = declaration.options.prefix
            lines.extend(f"      {prefix}{line}" for line in describe_fields(declaration.options.load()))
        for need in declaration.datasets:
            dataset = need.dataset
            lines.append(
                f"      may need: {dataset.key} ({dataset.title}; fetch-data {dataset.key}, "
                f"or --metadata {need.alternative})"
            )
    return "\n".join(lines)


def _find(name: str):
    from lm_eval_longmem.common.suggestions import did_you_mean
    from lm_eval_longmem.errors import UsageError
    from lm_eval_longmem.tasks import registry

    declaration = registry.find(name)
    if declaration is None:
        names = registry.task_names()
        raise UsageError(f"Unknown task {name!r}.{did_you_mean(name, names)} Tasks of ours: {', '.join(names)}.")
    return declaration
