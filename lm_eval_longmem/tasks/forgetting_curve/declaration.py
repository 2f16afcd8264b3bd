"""What the forgetting curve declares to the rest of the package (see tasks/declaration.py)."""

from __future__ import annotations

from lm_eval_longmem.data.pg19_dataset import PG19
from lm_eval_longmem.tasks.declaration import (
    DatasetNeed,
    Figure,
    FigureArgument,
    TaskDeclaration,
    TaskOptions,
    option_given,
)
from lm_eval_longmem.tasks.forgetting_curve.headlines import headlines, memory_length, no_numbers_note

# report.figures.LOG_AXIS_RULE (the report layer is above this one); tests/tasks/test_registry.py keeps them equal
LOG_AXIS_HELP = (
    "log-scale length axis (default: log when the lengths are log-spaced: they span 8x or more, or each "
    "is a roughly constant factor > 1.5 above the previous; else linear)"
)


def training_length(text: str) -> int:
    """`--training-length` as argparse reads it: a length of 1 token or more (0 or -5 drew no mark)."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a training length: expected a whole number of tokens, 1 or more"
        )
    return value


DECLARATION = TaskDeclaration(
    name="forgetting_curve",
    summary="The forgetting curve (Liu et al.): copy vs. language-modelling accuracy against length.",
    options=TaskOptions("fc_", "lm_eval_longmem.tasks.forgetting_curve.protocol:Options"),
    # fc_corpus=auto (the default) falls back to the offline corpus: PG-19 only when asked for by name
    datasets=(DatasetNeed(PG19, lambda options: option_given(options, "fc_corpus") == "pg19"),),
    headlines=headlines,
    inputs_check="lm_eval_longmem.tasks.forgetting_curve.protocol:check_inputs_fit",
    write_value=memory_length,
    no_numbers_note=no_numbers_note,
    figure=Figure(
        subcommand="plot",
        help="draw forgetting curves (copy vs LM accuracy, memory regions) from lm-eval results",
        default_output="forgetting_curve.png",
        draw="lm_eval_longmem.report.forgetting_curve_plot:draw_for_command",
        # The line printed per run is the one in its figure title (">L" where only a lower bound).
        describe="lm_eval_longmem.report.forgetting_curve_plot:memory_summary",
        reader="lm_eval_longmem.report.results_files:curve_run_from",
        arguments=(
            FigureArgument(
                ("--training-length",),
                {"type": training_length, "default": None, "help": "override the marked training length (tokens)"},
            ),
            FigureArgument(
                ("--overlay",), {"action": "store_true", "help": "all runs on one axes (default: one panel per run)"}
            ),
            FigureArgument(
                ("--log-x",), {"dest": "log_x", "action": "store_true", "default": None, "help": LOG_AXIS_HELP}
            ),
            FigureArgument(("--linear-x",), {"dest": "log_x", "action": "store_false", "help": "linear length axis"}),
        ),
    ),
)
