"""Bad study files are one message and exit 2, before anything trains or evaluates: an unknown
method or recipe, a budget a recipe cannot meet, a suite column that cannot run here, a
launcher that cannot start; and the console script says it without a traceback."""

from __future__ import annotations

import importlib.util

import pytest
import yaml

from lm_eval_longmem.cli.study import main
from tests.helpers.cli_runs import BIN, run
from tests.helpers.error_messages import assert_one_message

SUITE = {"ppl": {"lengths": [32], "windows": 1}}


def study_file(tmp_path, **raw):
    raw.setdefault("suite", SUITE)
    raw.setdefault("output_path", str(tmp_path / "out"))
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def refused(capsys, tmp_path, *expected, args=(), **raw) -> str:
    code = main([str(study_file(tmp_path, **raw)), *args])
    error = capsys.readouterr().err
    assert code == 2, error
    assert error.startswith("lm-eval-longmem study: error:") and "Traceback" not in error
    assert "LM_EVAL_LONGMEM_DEBUG" not in error  # exit 2: argparse's one line, no debugging hint
    for text in expected:
        assert text in error, error
    assert not (tmp_path / "out").exists()  # nothing ran
    return error


def test_unknown_method_is_the_wrappers_message(capsys, tmp_path):
    refused(capsys, tmp_path, "row nosuch", "Unknown method='nosuch'", "Valid methods:", methods=["nosuch"])


def test_bad_method_argument_names_the_row(capsys, tmp_path):
    rows = [{"label": "NTK-F", "method": "ntk", "args": {"facter": 4}}]
    refused(capsys, tmp_path, "row NTK-F", "facter", methods=rows)


def test_unknown_recipe_lists_the_shipped_ones(capsys, tmp_path):
    budget = {"tokens": 1024, "seq_len": 256}
    refused(
        capsys, tmp_path, "row nosuch", "No recipe 'nosuch'", "tiny-pi", methods=[{"recipe": "nosuch"}], budget=budget
    )


def test_a_budget_below_one_step_is_refused(capsys, tmp_path):
    budget = {"tokens": 100, "seq_len": 256}
    refused(
        capsys,
        tmp_path,
        "100 tokens is less than one step of row PI",
        methods=[{"label": "PI", "recipe": "tiny-pi"}],
        budget=budget,
    )


def test_a_recipe_that_refuses_the_budgets_length_says_why(capsys, tmp_path):
    budget = {"steps": 1, "seq_len": 1}
    refused(
        capsys,
        tmp_path,
        "row PI (recipe tiny-pi) cannot train",
        "seq_len",
        methods=[{"label": "PI", "recipe": "tiny-pi"}],
        budget=budget,
    )


def test_a_recipe_that_trains_from_scratch_is_not_an_extension(capsys, tmp_path):
    budget = {"tokens": 1024, "seq_len": 256}
    refused(capsys, tmp_path, "trains a new model from scratch", methods=[{"recipe": "tiny-fox"}], budget=budget)


def test_a_row_cannot_set_the_budgets_keys(capsys, tmp_path):
    budget = {"tokens": 1024, "seq_len": 256}
    rows = [{"label": "PI", "recipe": "tiny-pi", "recipe_keys": {"max_steps": 9}}]
    refused(capsys, tmp_path, "row PI sets max_steps", methods=rows, budget=budget)


def test_trained_rows_need_a_budget(capsys, tmp_path):
    refused(
        capsys, tmp_path, "rows PI train, so the study needs a 'budget'", methods=[{"label": "PI", "recipe": "tiny-pi"}]
    )


def test_unknown_keys_and_columns(capsys, tmp_path):
    refused(capsys, tmp_path, "unknown key(s) 'metods'", metods=[], methods=["vanilla"])
    refused(capsys, tmp_path, "unknown suite column(s) perplexity", methods=["vanilla"], suite={"perplexity": {}})
    refused(
        capsys, tmp_path, "--without ruler: not in this study's suite", args=["--without", "ruler"], methods=["vanilla"]
    )
    refused(capsys, tmp_path, "ppl_lenghts", methods=["vanilla"], suite={"ppl": {"lenghts": [32]}})


@pytest.mark.skipif(
    all(importlib.util.find_spec(name) for name in ("jieba", "fuzzywuzzy", "rouge")),
    reason="lm-eval's longbench extra is installed here",
)
def test_a_column_whose_extra_is_missing_says_how_to_install_it_or_go_without(capsys, tmp_path):
    suite = {**SUITE, "longbench": {"length": 64}}
    refused(
        capsys,
        tmp_path,
        "longbench: lm-eval's 'longbench' extra is not installed",
        "pip install 'lm_eval[longbench]'",
        "--without longbench",
        methods=["vanilla"],
        suite=suite,
    )


@pytest.mark.parametrize(
    "evaluation, expected",
    [
        ({"model_args": {"batch_size": 4}}, "give it as evaluation.batch_size: 4 instead"),
        ({"model_args": {"device": "cpu"}}, "give it as evaluation.device: cpu instead"),
        ({"model_args": {"dtype": "float8"}}, "dtype=float8 is not a torch dtype"),
        ({"device": "tpu"}, "'tpu' is not a device"),
    ],
    ids=["batch-size-in-model-args", "device-in-model-args", "dtype", "device"],
)
def test_what_each_lm_eval_run_would_refuse_is_refused_with_the_file(capsys, tmp_path, evaluation, expected):
    refused(capsys, tmp_path, "evaluation:", expected, methods=["vanilla"], evaluation=evaluation)


def test_a_launcher_that_cannot_start(capsys, tmp_path):
    launcher = ["no-such-launcher-here", "launch"]
    refused(
        capsys,
        tmp_path,
        "launcher.eval starts with 'no-such-launcher-here', which is not installed",
        methods=["vanilla"],
        launcher=launcher,
    )


def test_the_console_script_says_it_in_one_message(tmp_path):
    proc = run([str(BIN / "lm-eval-longmem"), "study", str(tmp_path / "missing.yaml")], check=False)
    assert proc.returncode == 2
    assert_one_message(proc, "No such study file", "lm-eval-longmem study --examples")


def test_examples_are_listed_and_plan(capsys):
    assert main(["--examples"]) == 0
    listed = capsys.readouterr().out
    assert "tiny:" in listed and "lceg:" in listed


def test_the_lceg_plan_is_the_studys_and_lm_eval_and_train_accept_its_commands(capsys):
    """`study lceg --dry-run`: LLaMA-2-7B, 1B tokens at 32k over a global batch of 32, its eleven
    methods and five columns; every evaluation command parses with lm-eval's own parser (the
    training commands were loaded by the training module itself while planning)."""
    import shlex

    from lm_eval._cli import HarnessCLI

    assert main(["lceg", "--dry-run"]) == 0
    out = capsys.readouterr().out
    if "cannot run here" in out:  # offline: PG-19, LongBench's or RULER's needs are missing here
        assert "study: the run itself would stop before starting (exit 2): suite column(s)" in out
    assert "11 methods, 7 trained, 40 steps" in out
    train = [line.strip() for line in out.splitlines() if "-m lm_eval_longmem_training " in line]
    evaluate = [line.strip() for line in out.splitlines() if "-m lm_eval run " in line]
    assert len(train) == 7 and len(evaluate) == 33
    assert all("model=meta-llama/Llama-2-7b-hf" in c and "data=cerebras/SlimPajama-627B" in c for c in train)
    assert sum("seq_len=32768 max_steps=954" in c for c in train) == 5  # 1e9 / (32 x 32768), rounded up
    assert any("seq_len=512 max_steps=61036" in c for c in train)  # Landmark at 512: the same tokens
    for command in evaluate:
        words = shlex.split(command)
        parsed = HarnessCLI()._parser.parse_args(words[words.index("lm_eval") + 1 :])
        assert parsed.model == "longmem" and parsed.device == "cuda"
        if parsed.tasks == ["longbench"]:
            assert parsed.model_args["max_length"] == 32768 and parsed.model_args["overlength"] == "middle"
    assert any('"ppl_stride": 256' in c and '"ppl_corpus": "pg19"' in c for c in evaluate)
