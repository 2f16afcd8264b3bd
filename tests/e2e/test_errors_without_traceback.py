"""Our errors reach a user as one message and a non-zero exit, never a traceback (through the
real `lm_eval` and `lm-eval-longmem` commands); LM_EVAL_LONGMEM_DEBUG=1 brings the traceback back.
A mistake in the command exits 2 wherever it is found, any other error 1.

The real CLI is run for an argument no one takes and for inputs longer than the model: both were
once found only after the model loaded and are now found at start-up, from the local checkpoint's
config (about 7 s each: the method classes import torch). Other errors caught at start-up are run
through the real CLI in harness/test_preflight.py, and the messages of the others are tested where
they are raised (lm_eval_model/test_longmem_lm.py, lm_eval_model/test_fox_checkpoint.py, ...)."""

import pytest

from lm_eval_longmem.common.hub import HubUnavailableError, MissingLocalPathError
from lm_eval_longmem.data.requirements import MissingDatasetsError
from lm_eval_longmem.errors import (
    USAGE_EXIT_STATUS,
    LongMemError,
    UsageError,
    concise_excepthook,
    exit_2_for_usage_errors,
    user_error_in,
)
from lm_eval_longmem.harness.task_extras import MissingTaskPackageError
from lm_eval_longmem.models.method_framework.arguments import MethodArgumentError
from lm_eval_longmem.models.method_registry import UnknownMethodError
from lm_eval_longmem.models.method_registry.model_arguments import UnknownModelArgumentError
from lm_eval_longmem.tasks.task_options import TaskOptionError
from tests.helpers.cli_runs import BIN, run
from tests.helpers.error_messages import assert_one_message, started_nothing_heavy


@pytest.mark.parametrize(
    "model_args, extra, expected",
    [
        ("method=yarn,facter=2", ["--tasks", "forgetting_curve"], ["Unknown --model_args facter", "factor"]),
        (
            "method=vanilla",
            ["--tasks", "longmem_passkey", "--metadata", "pk_lengths=[4096]"],
            ["length(s) [4096] do not fit"],
        ),
    ],
    ids=["misspelled-argument", "length-past-the-model"],
)
def test_lm_eval_prints_our_errors_as_one_message(tiny_model_dir, model_args, extra, expected):
    proc = run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir},{model_args}",
            *extra,
        ],
        check=False,
    )
    assert_one_message(proc, *expected)
    assert proc.returncode == USAGE_EXIT_STATUS and started_nothing_heavy(proc)


def test_plot_of_a_missing_or_corrupt_results_file_is_one_message(tmp_path):
    proc = run([str(BIN / "lm-eval-longmem"), "plot", str(tmp_path / "nowhere")], check=False)
    assert_one_message(proc, "No such results file or directory")
    corrupt = tmp_path / "results_2026.json"
    corrupt.write_text("{not json")
    proc = run([str(BIN / "lm-eval-longmem"), "plot", str(corrupt)], check=False)
    assert_one_message(proc, "is not a readable lm-eval results file")


def test_debug_switch_and_other_errors_keep_their_traceback(monkeypatch):
    seen = []
    hook = concise_excepthook(lambda *args: seen.append(args[1]))
    bug = KeyError("a bug")
    hook(KeyError, bug, None)
    assert seen == [bug]  # not ours: the previous hook (the traceback) handles it
    ours = LongMemError("what was wrong and the fix")
    monkeypatch.setenv("LM_EVAL_LONGMEM_DEBUG", "1")
    hook(LongMemError, ours, None)
    assert seen == [bug, ours]


def test_an_error_raised_from_ours_is_found_behind_it():
    try:
        try:
            raise LongMemError("the real reason")
        except LongMemError as inner:
            raise RuntimeError("lm-eval wrapped it") from inner
    except RuntimeError as outer:
        assert str(user_error_in(outer)) == "the real reason"
    assert user_error_in(ValueError("plain")) is None


def test_a_mistake_in_the_command_exits_2_wherever_it_is_found(capsys):
    def run_that_fails_late():
        try:
            raise TaskOptionError("--metadata fc_points=0 is out of range")
        except TaskOptionError as inner:
            raise RuntimeError("lm-eval wrapped it") from inner

    with pytest.raises(SystemExit) as ended:
        exit_2_for_usage_errors(run_that_fails_late, "lm_eval")
    assert ended.value.code == USAGE_EXIT_STATUS
    assert capsys.readouterr().err == "lm_eval: error: --metadata fc_points=0 is out of range\n"
    offline = HubUnavailableError("no network")
    with pytest.raises(HubUnavailableError):  # not the command's fault: the excepthook's one message, exit 1
        exit_2_for_usage_errors(lambda: (_ for _ in ()).throw(offline))


@pytest.mark.parametrize(
    "error, in_the_command",
    [
        (TaskOptionError, True),
        (UnknownMethodError, True),
        (MethodArgumentError, True),
        (UnknownModelArgumentError, True),
        (MissingLocalPathError, True),
        (HubUnavailableError, False),
        (MissingDatasetsError, False),
        (MissingTaskPackageError, False),
    ],
)
def test_which_errors_are_mistakes_in_the_command(error, in_the_command):
    """The rule of docs/reliability.md: what fixing the command line fixes exits 2; what needs the
    machine changed (network, data, a package) exits 1."""
    assert issubclass(error, UsageError) is in_the_command
