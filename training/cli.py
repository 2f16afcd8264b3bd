"""`lm-eval-longmem train RECIPE [key=value ...]` (also `python -m lm_eval_longmem_training` and
`accelerate launch -m lm_eval_longmem_training`): bad input is one message, never a traceback."""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import textwrap

from .errors import TrainingError

USAGE = "lm-eval-longmem train RECIPE [key=value ...]"


def help_text() -> str:
    from .approaches import available_approaches
    from .recipes.loading import describe_keys, shipped_recipes

    recipes = "\n".join(recipe_line(name, summary_of(path)) for name, path in shipped_recipes().items())
    approaches = "\n".join(recipe_line(name, cls.summary + ".") for name, cls in available_approaches().items())
    return (
        f"RECIPE is a shipped recipe's name or a YAML path; key=value overrides any key\n"
        f"(method_args.factor=8 sets one method argument).\n\nRecipes:\n{recipes}\n\n"
        f"Approaches (approach=NAME):\n{approaches}\n\nKeys:\n{describe_keys()}\n\n"
        "Several processes/GPUs: accelerate launch [--config_file fsdp.yaml] -m lm_eval_longmem_training RECIPE ...\n"
        "(several CPU processes: ACCELERATE_USE_CPU=true accelerate launch --multi_gpu --num_processes N ...)"
    )


NAME_WIDTH = 20
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def summary_of(path) -> str:
    """The first sentence of a recipe's opening comment, whole (it often spans two comment lines)."""
    paragraph = []
    for line in path.read_text("utf-8").splitlines():
        text = line.lstrip("#").strip()
        if not line.startswith("#") or not text:  # the paragraph ends at code or an empty comment line
            if paragraph:
                break
            continue
        paragraph.append(text)
    return _SENTENCE_END.split(" ".join(paragraph), maxsplit=1)[0]


def recipe_line(name: str, summary: str) -> str:
    """`  name   summary`, the summary wrapped under itself to the terminal's width (at most 100)."""
    width = max(60, min(100, shutil.get_terminal_size((100, 24)).columns - 2))
    indent = " " * (NAME_WIDTH + 3)
    return textwrap.fill(
        summary, width, initial_indent=f"  {name:<{NAME_WIDTH}} ", subsequent_indent=indent, break_on_hyphens=False
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lm-eval-longmem train",
        usage=USAGE,
        epilog=help_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Continue pretraining a model for a long-memory method; the export loads with "
        "`lm_eval --model longmem --model_args pretrained=<output_dir>/export`.",
    )
    parser.add_argument("recipe", help="recipe name or YAML file")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="recipe keys to override")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        from .recipes.loading import find_recipe, load_recipe

        recipe = load_recipe(args.recipe, args.overrides, check_paths=True)  # in full, before torch loads
        from .loop.training_loop import train

        summary = train(recipe, recipe_source=str(find_recipe(args.recipe)))
    except TrainingError as err:
        print(f"lm-eval-longmem train: error: {err}", file=sys.stderr)
        return 2
    print(done_line(summary))
    return 0


def done_line(summary: dict) -> str:
    """The run's end in words."""
    if summary.get("finished"):  # an earlier run did it all: say what is there
        return summary["message"]
    line = (
        f"done: {summary['steps']:,} steps, {summary['tokens']:,} tokens in all, "
        f"{summary['tokens_per_second']:,.0f} tokens/s this run"
    )
    return line + (f"; export: {summary['export']}" if "export" in summary else "; no export written")
