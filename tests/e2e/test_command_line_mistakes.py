"""Common command-line mistakes get one line with the valid choices and a "did you mean", exit
status 2, through the real `lm_eval` and `lm-eval-longmem` commands (each stops before lm-eval
imports torch: a second or two); commands lm-eval accepts are untouched. `lm-eval-longmem`
names itself in every message, lm-eval's own included."""

import pytest

from lm_eval_longmem.common.suggestions import close_matches, did_you_mean, either
from lm_eval_longmem.harness import cli_mistakes
from lm_eval_longmem.models.method_registry import UnknownMethodError, get_method
from tests.helpers.cli_runs import BIN, run


@pytest.fixture(scope="module")
def registered():
    import lm_eval_longmem

    lm_eval_longmem.register()  # our task folder and lm-eval's parse cache, as the start-up hook does


def assert_one_line(proc, *expected):
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr[-3000:]
    assert "error:" in lines[0] and "Traceback" not in proc.stderr
    for text in expected:
        assert text in lines[0], lines[0]


def test_misspelled_task_is_one_line_with_a_suggestion():
    proc = run([str(BIN / "lm_eval"), "--model", "longmem", "--tasks", "forgeting_curve"], check=False)
    assert_one_line(
        proc,
        "lm_eval: error: Unknown task 'forgeting_curve'. Did you mean forgetting_curve?",
        "`lm_eval ls tasks` lists all",
        "this plugin's: forgetting_curve, longmem, longmem_booksum, longmem_passkey",
    )


def test_misspelled_task_with_the_default_model_not_yet_converted(tmp_path):
    """A first run on a fresh machine: the mistake is reported before the model is converted.
    (The task index cache is shared with the real one: only the converted model is missing.)"""
    from lm_eval_longmem.common.paths import cache_dir

    (tmp_path / "task_index").symlink_to(cache_dir("task_index"), target_is_directory=True)
    proc = run(
        [str(BIN / "lm_eval"), "--model", "longmem", "--tasks", "forgeting_curve"],
        check=False,
        env_extra={"LM_EVAL_LONGMEM_CACHE": str(tmp_path)},
    )
    assert_one_line(proc, "Unknown task 'forgeting_curve'. Did you mean forgetting_curve?")
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())


def test_malformed_json_metadata_is_one_line():
    proc = run(
        [str(BIN / "lm_eval"), "--model", "longmem", "--tasks", "forgetting_curve", "--metadata", '{"fc_samples": 3'],
        check=False,
    )
    assert_one_line(proc, "error: argument --metadata: Invalid JSON")


def test_a_value_lm_evals_parser_takes_but_its_run_cannot_use_is_one_line():
    """Through the start-up hook and through the pass-through, which names itself; every such value
    of the fuzz table is checked in-process (harness/test_run_options_fuzz.py)."""
    proc = run([str(BIN / "lm_eval"), "--model", "longmem", "--tasks", "/no/such/task.yaml"], check=False)
    assert_one_line(proc, "lm_eval: error: argument --tasks: no task file matches /no/such/task.yaml")
    proc = run(
        [str(BIN / "lm-eval-longmem"), "--model", "hf", "--tasks", "forgetting_curve", "--batch_size", "0"], check=False
    )
    assert_one_line(proc, "lm-eval-longmem: error: argument --batch_size: '0' is not a batch size", "'auto'")


def test_the_pass_through_names_itself_in_lm_evals_own_parse_errors():
    command = ["--model", "longmem", "--tasks", "forgetting_curve", "--limit", "abc"]
    proc = run([str(BIN / "lm-eval-longmem"), *command], check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    usage, error = proc.stderr.strip().splitlines()
    assert usage.startswith("usage: lm-eval-longmem run --model <model>"), usage
    assert error == "lm-eval-longmem run: error: argument --limit/-L: invalid float value: 'abc'", error


def test_misspelled_subcommand_lists_ours_and_lm_evals():
    proc = run([str(BIN / "lm-eval-longmem"), "plott"], check=False)
    assert_one_line(
        proc,
        "lm-eval-longmem: error: unknown subcommand 'plott'. Did you mean plot",
        "fetch-data, leaderboard, methods, plot",
        "sweep, tasks, train",
        "run, ls, validate",
    )


def test_unknown_tasks_each_get_their_suggestions_other_failures_are_left_alone(registered):
    message = cli_mistakes.unknown_tasks_message("hellaswa,forgetting_curve,zzqqxx", model="hf")
    assert message.startswith("Unknown tasks 'hellaswa' (did you mean hellaswag")
    assert "and 'zzqqxx'." in message and "forgetting_curve" not in message
    assert "this plugin's" not in message  # our task list only for our model
    assert cli_mistakes.unknown_tasks_message(["forgetting_curve", "longmem*"]) is None  # all known: re-raised as is
    assert cli_mistakes.unknown_tasks_message(["/no/such/task.yaml"]) is None  # lm-eval's own file handling


def test_known_tasks_go_through_unchanged(registered):
    from lm_eval.config.evaluate_config import EvaluatorConfig

    cli_mistakes.install_task_suggestions()
    config = EvaluatorConfig(tasks="forgetting_curve,longmem_passkey")
    config.process_tasks()
    assert config.tasks == ["forgetting_curve", "longmem_passkey"]


def test_a_method_in_another_case_names_the_method_meant_in_one_line():
    with pytest.raises(UnknownMethodError) as caught:
        get_method("YARN")
    message = str(caught.value)
    assert "Did you mean method=yarn?" in message and "\n" not in message
    assert "vanilla, yarn" in message and "lm-eval-longmem methods" in message


def test_suggestions():
    assert close_matches("YARN", ["yarn", "pi"]) == ["yarn"]
    assert close_matches("shakespear", ["auto", "pg19", "shakespeare"]) == ["shakespeare"]
    assert did_you_mean("qqq", ["auto", "pg19"]) == ""
    assert either(["a"]) == "a" and either(["a", "b", "c"]) == "a, b or c" and either(["a", "b"], "and") == "a and b"
