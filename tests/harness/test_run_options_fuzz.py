"""Values lm-eval's parser accepts for the `run` options our runs pass through, and that its run
cannot use, are refused at start-up with one line naming the option; the others pass untouched.

Every case of tests/helpers/run_option_cases.py, in-process: parsed by lm-eval's own parser
(its types and `key=value` readings), then through the start-up check's lm-eval options
(harness/run_options.py), which preflight.check calls first. The same cases end to end, each as
a real run of the tiny model: tests/e2e/test_run_options_slow.py; a few through the real
commands: tests/e2e/test_command_line_mistakes.py."""

import pytest

from lm_eval_longmem.errors import UsageError
from lm_eval_longmem.harness import run_options
from tests.helpers.run_option_cases import CASES, write_task_files


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_task_files(tmp_path_factory.mktemp("task_files"))


@pytest.fixture(scope="module")
def parse():
    from lm_eval._cli import HarnessCLI

    parser = HarnessCLI()._parser
    return lambda argv: parser.parse_args(["run", "--model", "longmem", *argv])


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_each_value_is_refused_in_one_line_or_left_as_lm_eval_reads_it(case, folder, parse):
    tasks = [] if case.option == "--tasks" else ["--tasks", "forgetting_curve"]
    args = parse([*tasks, case.option, case.value_in(folder)])
    if case.refused is None:
        run_options.check(args)
        return
    with pytest.raises(UsageError) as caught:
        run_options.check(args)
    message = str(caught.value)
    assert message.startswith(f"argument {case.option}: ") and "\n" not in message, message
    assert case.refused in message, message


def test_the_table_covers_every_option_both_ways():
    """Each option has values it must accept and values it must refuse."""
    for option in {case.option for case in CASES}:
        outcomes = {case.refused is None for case in CASES if case.option == option}
        assert outcomes == {True, False}, option
