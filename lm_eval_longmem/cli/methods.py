"""`lm-eval-longmem methods`: every backend of `--model longmem` with its arguments."""

from __future__ import annotations

import argparse

HELP = "list the methods of --model longmem with their arguments, defaults and help"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="lm-eval-longmem methods", description=HELP[0].upper() + HELP[1:] + ".")
    parser.add_argument("name", nargs="?", default=None, help="show only this method")
    args = parser.parse_args(argv)

    from lm_eval_longmem.models.method_registry import method_listing

    listing = method_listing(args.name)  # an unknown name fails before anything is printed
    print("Methods for --model longmem (--model_args method=NAME,arg=value,...):")
    print(listing)
    return 0
