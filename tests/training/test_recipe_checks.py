"""Every recipe key's range is declared beside it and checked, generically, before anything loads:
one message naming the key, the value as typed, where it came from and the valid range; `--help`
shows the same ranges. Files the run needs (model, tokenizer, data, output_dir) are checked
before the model loads too."""

import dataclasses
import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from lm_eval_longmem_training.approaches import approaches_reading
from lm_eval_longmem_training.cli import main as train_main
from lm_eval_longmem_training.errors import TrainingError
from lm_eval_longmem_training.recipes.key_checks import Range
from lm_eval_longmem_training.recipes.loading import load_recipe
from lm_eval_longmem_training.recipes.preflight import check_output_dir
from lm_eval_longmem_training.recipes.recipe import Recipe

HINTS = typing.get_type_hints(Recipe)
RANGED = [f for f in dataclasses.fields(Recipe) if isinstance(f.metadata["check"], Range)]


def test_every_number_key_declares_its_range():
    numbers = [f.name for f in dataclasses.fields(Recipe) if HINTS[f.name] in (int, float)]
    assert numbers and all(
        isinstance(f.metadata["check"], Range) for f in dataclasses.fields(Recipe) if f.name in numbers
    )


def outside(check: Range, annotation) -> list:
    """Values just past each end of `check` (each refused)."""
    step = 1 if annotation is int else 1e-6
    values = []
    if check.low is not None:
        values.append(check.low if check.low_open else check.low - step)
    if check.high is not None:
        values.append(check.high if check.high_open else check.high + step)
    return values


def recipe_reading(key: str) -> str:
    """A tiny recipe whose approach reads `key` (another approach's key is refused)."""
    return next((f"tiny-{name}" for name in approaches_reading(key)), "tiny-pi")


@pytest.mark.parametrize("field", RANGED, ids=[f.name for f in RANGED])
def test_each_range_is_enforced_at_its_ends(field):
    check, annotation, recipe = field.metadata["check"], HINTS[field.name], recipe_reading(field.name)
    for value in outside(check, annotation):
        with pytest.raises(TrainingError) as err:
            load_recipe(recipe, [f"{field.name}={value}"])
        message = str(err.value)
        assert (
            message == f"{field.name}={value} on the command line is out of range: expected "
            f"{'an integer' if annotation is int else 'a number'} {check}."
        ), message
    for end, is_open in ((check.low, check.low_open), (check.high, check.high_open)):
        if end is not None and not is_open:  # a closed end is allowed
            assert getattr(load_recipe(recipe, [f"{field.name}={annotation(end)}"]), field.name) == end


@pytest.mark.parametrize(
    "override, message",
    [
        ("lr=-1e-3", "lr=-1e-3 on the command line is out of range: expected a number > 0."),
        ("adam_beta2=1", "adam_beta2=1 on the command line is out of range: expected a number in [0, 1)."),
        ("adam_eps=0", "adam_eps=0 on the command line is out of range: expected a number > 0."),
        ("ema_decay=1.0", "ema_decay=1.0 on the command line is out of range: expected a number in [0, 1)."),
        ("lora_dropout=1", "lora_dropout=1 on the command line is out of range: expected a number in [0, 1)."),
        (
            "s2_group_fraction=0",
            "s2_group_fraction=0 on the command line is out of range: expected a number in (0, 1].",
        ),
        (
            "lr_schedule=cosin",
            "lr_schedule=cosin on the command line is not valid: expected one of constant_with_warmup, "
            "linear, cosine. Did you mean cosine?",
        ),
        (
            "lora_targets=[]",
            "lora_targets=[] on the command line is empty: expected a list of texts that is not empty.",
        ),
        ("max_steps=0", "max_steps=0 on the command line is out of range: expected an integer >= 1."),
        # an unset shell variable (`output_dir=$OUT`) must not train into, or resume, runs/<name>
        ("output_dir=", "output_dir= on the command line is empty: expected a text that is not empty or blank."),
        ("output_dir= ", "output_dir=' ' on the command line is empty: expected a text that is not empty or blank."),
        ("name=\t", "name='\\t' on the command line is empty: expected a text that is not empty or blank."),
    ],
)
def test_messages_name_key_value_origin_and_range(override, message):
    with pytest.raises(TrainingError) as err:
        load_recipe("tiny-pi", [override])
    assert str(err.value) == message


def test_output_dir_left_out_is_the_runs_folder_of_the_recipe():
    assert load_recipe("tiny-pi").output_dir == str(Path("runs") / "tiny-pi")
    assert load_recipe("tiny-pi", ["name=mine"]).output_dir == str(Path("runs") / "mine")


def test_values_from_a_recipe_file_say_so_and_all_problems_are_listed(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("approach: rope_extension\nmethod: pi\nmethod_args: {factor: 2}\nlr: 0\nwarmup_steps: -5\n")
    with pytest.raises(TrainingError) as err:
        load_recipe(str(path))
    assert str(err.value) == (
        f"lr=0 in recipe {path} is out of range: expected a number > 0; warmup_steps=-5 in "
        f"recipe {path} is out of range: expected an integer >= 0."
    )


def test_help_shows_the_declared_ranges(capsys):
    with pytest.raises(SystemExit):
        train_main(["--help"])
    out = capsys.readouterr().out
    for line in (
        "lr (float > 0, default 2e-05)",
        "adam_beta1 (float in [0, 1), default 0.9)",
        "seq_len (int >= 2, default 4096)",
        "lora_targets (tuple, not empty, default",
        "s2_group_fraction (float in (0, 1], default 0.25)",
    ):
        assert line in out, line


def test_approach_and_method_demands_are_checked_with_the_recipe():
    with pytest.raises(TrainingError, match="factor"):
        load_recipe("tiny-pi", ["method_args.factor=-2"])
    with pytest.raises(
        TrainingError,
        match="model_config.model_type=transfomer-project_fox is not a model type.*"
        "Did you mean transformer-project_fox",
    ):
        load_recipe("tiny-transformer", ["model_config.model_type=transfomer-project_fox"])
    with pytest.raises(TrainingError, match=r"seq_len \(64\) must exceed method_args.segment_length \(64\)"):
        load_recipe("tiny-infini", ["seq_len=64"])
    with pytest.raises(
        TrainingError,
        match="model_config.hidden_size=abc is not valid: the transformer-project_fox "
        "default config holds a number there",
    ):
        load_recipe("tiny-transformer", ["model_config.hidden_size=abc"])


def cli(*args, cwd=None) -> subprocess.CompletedProcess:
    """The training CLI in a fresh interpreter; prints whether torch was imported at the end."""
    code = (
        "import sys\nfrom lm_eval_longmem_training.cli import main\nrc = main(sys.argv[1:])\n"
        "print('torch imported:', 'torch' in sys.modules)\nsys.exit(rc)"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def test_a_bad_learning_rate_is_one_line_before_torch_loads():
    proc = cli("tiny-transformer", "lr=-1e-3")
    assert proc.returncode == 2 and "torch imported: False" in proc.stdout
    assert (
        proc.stderr == "lm-eval-longmem train: error: lr=-1e-3 on the command line is out of range: "
        "expected a number > 0.\n"
    )


def test_output_dir_that_is_a_file_or_under_one_is_one_line(tiny_model_dir, corpus_file, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("mine")
    common = [f"model={tiny_model_dir}", f"data={corpus_file}", "seq_len=32", "max_steps=1", "progress_bar=false"]
    for output_dir, says in ((blocker, "is a file;"), (blocker / "run", f"cannot be created: {blocker} is a file;")):
        assert train_main(["tiny-pi", f"output_dir={output_dir}", *common]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"lm-eval-longmem train: error: output_dir={output_dir} {says}")
    assert blocker.read_text() == "mine" and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_a_bad_output_dir_is_one_line_before_torch_loads(tmp_path):
    """It was found after the model config was built (5 s of CPU, 36 s on a busy machine)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("mine")
    proc = cli("tiny-transformer", f"output_dir={blocker}")
    assert proc.returncode == 2 and "torch imported: False" in proc.stdout
    assert proc.stderr.startswith(f"lm-eval-longmem train: error: output_dir={blocker} is a file;")


def test_output_dir_that_cannot_be_written_is_one_message(tmp_path, monkeypatch):
    import tempfile

    def refuse(**kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    with pytest.raises(
        TrainingError,
        match=f"output_dir={tmp_path}/run cannot be written: {tmp_path} refuses new files \\(Permission denied\\)",
    ):
        check_output_dir(str(tmp_path / "run"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_output_dir_is_refused(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(TrainingError, match="cannot be written"):
            check_output_dir(str(tmp_path / "run"))
    finally:
        tmp_path.chmod(0o700)


def test_missing_data_and_a_model_that_is_a_file_fail_before_loading(tiny_model_dir, corpus_file, tmp_path):
    common = [f"output_dir={tmp_path / 'run'}", "progress_bar=false"]
    assert train_main(["tiny-pi", f"model={tiny_model_dir}", "data=./no_such_corpus.txt", *common]) == 2
    assert train_main(["tiny-pi", f"model={tiny_model_dir / 'config.json'}", f"data={corpus_file}", *common]) == 2
    assert not (tmp_path / "run").exists()


def test_a_bad_recipe_under_resume_never_moves_nothing_aside(tiny_model_dir, corpus_file, tmp_path):
    """Checked before the output folder is touched: the earlier run stays where it is."""
    from tests.helpers.training_helpers import run_recipe

    run_recipe("tiny-pi", tiny_model_dir, corpus_file, tmp_path / "run", max_steps=1)
    with pytest.raises(TrainingError, match="factor"):
        run_recipe(
            "tiny-pi", tiny_model_dir, corpus_file, tmp_path / "run", resume="never", **{"method_args.factor": -1}
        )
    assert not list((tmp_path / "run").glob("previous-*"))
    assert json.loads((tmp_path / "run" / "export" / "config.json").read_text())["longmem_training"]["steps"] == 1
