"""Every case of tests/helpers/run_option_cases.py as a real run of the tiny model through
`lm-eval-longmem`'s pass-through (lm-eval's CLI with the start-up hook's wrappers), in-process:
a refused value ends in one `error:` line naming the option and exit status 2, never a
traceback; an accepted one runs to its results table, as lm-eval alone would run it.

Slow (about 2 s a case, ~3 minutes): the fast tier checks the same table at start-up in-process
(tests/harness/test_run_options_fuzz.py) and two cases through the real commands
(tests/e2e/test_command_line_mistakes.py)."""

import sys

import pytest

from lm_eval_longmem.cli import main
from tests.helpers.run_option_cases import CASES, write_task_files

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return write_task_files(tmp_path_factory.mktemp("task_files"))


def small_run(case, model_dir, corpus_file) -> list[str]:
    if case.run == "pk":
        tasks = ["--tasks", "longmem_passkey", "--metadata", "pk_lengths=[60]", "pk_depths=[50]", "pk_samples=1"]
    else:
        metadata = [f"fc_corpus={corpus_file}", "fc_max_length=24", "fc_points=2", "fc_samples=1"]
        tasks = ["--tasks", "forgetting_curve", "--metadata", *metadata]
    model = ["--model", "longmem", "--model_args", f"pretrained={model_dir},method=vanilla", "--device", "cpu"]
    return [*model, *tasks]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_real_run_refuses_in_one_line_or_runs(case, folder, tiny_model_dir, corpus_file, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # the pass-through sets its own
    argv = small_run(case, tiny_model_dir, corpus_file)
    if case.option == "--tasks":
        argv[argv.index("--tasks") + 1] = case.value_in(folder)
    else:
        argv += [case.option, case.value_in(folder)]
    if case.refused is None:
        assert main(argv) == 0
        assert "|" in capsys.readouterr().out  # lm-eval's results table
        return
    with pytest.raises(SystemExit) as ended:
        main(argv)
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert ended.value.code == 2 and "Traceback" not in err, err[-3000:]
    assert len(errors) == 1 and errors[0].startswith(f"lm-eval-longmem: error: argument {case.option}: "), err[-3000:]
    assert case.refused in errors[0], errors[0]
