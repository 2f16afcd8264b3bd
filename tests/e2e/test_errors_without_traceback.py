"""Our errors reach a user as one message and a non-zero exit, never a traceback (through the
real `lm_eval` and `lm-eval-longmem` commands); LM_EVAL_LONGMEM_DEBUG=1 brings the traceback back.

Each `lm_eval` run that loads a model costs ~15 s on 2 cores, so the real CLI is run for one error
raised while the model loads and one raised while a task builds; errors caught at start-up, before
any model loads, are run through the real CLI in harness/test_preflight.py, and the messages of
the others are tested where they are raised (lm_eval_model/test_longmem_lm.py,
lm_eval_model/test_fox_checkpoint.py, ...)."""

import pytest

from lm_eval_longmem.errors import LongMemError, concise_excepthook, user_error_in
from tests.helpers.cli_runs import BIN, run
from tests.helpers.error_messages import assert_one_message


@pytest.mark.parametrize(
    "model_args, extra, expected",
    [
        ("method=yarn,facter=2", ["--tasks", "forgetting_curve"], ["Unknown --model_args facter", "factor"]),
        (
            "method=vanilla",
            ["--tasks", "longmem_passkey", "--metadata", "pk_lengths=[4096]"],
            ["length(s) [4096] do not fit"],
        ),
    ],  # the first is raised while the model loads, the second while the task builds (it needs the model's
    # context length; an option that is malformed or out of range is caught at start-up,
    # harness/test_preflight_option_ranges.py)
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
