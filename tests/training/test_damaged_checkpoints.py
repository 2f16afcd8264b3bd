"""A damaged checkpoint (a file missing, cut short, emptied, zeroed or overwritten; run.json
unreadable) is never trained over in silence and never a traceback: the run falls back to the
newest intact checkpoint with a warning, sets the damaged one aside (`step-N.unusable`) and ends
on the uninterrupted run's losses; with no intact checkpoint it stops with one message and
changes nothing. The fast tier damages each file once; the slow tier every file every way."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from lm_eval_longmem_training.cli import main as train_main
from lm_eval_longmem_training.errors import TrainingError
from lm_eval_longmem_training.loop.progress import read_metrics
from tests.helpers.fault_injection import DAMAGES, FaultTally, damage
from tests.helpers.training_helpers import run_recipe

SETTINGS = {"max_steps": 6, "save_every": 2, "keep_checkpoints": 3, "ema_decay": 0.5}
FILES = (
    "model.safetensors",
    "optimizer.bin",
    "random_states_0.pkl",
    "custom_checkpoint_0.pkl",
    "custom_checkpoint_1.pkl",
    "custom_checkpoint_2.pkl",
    "run.json",
)
FAST_CASES = [
    ("model.safetensors", "truncated"),
    ("model.safetensors", "zeroed"),
    ("optimizer.bin", "garbage"),
    ("optimizer.bin", "missing"),
    ("random_states_0.pkl", "garbage"),
    ("custom_checkpoint_1.pkl", "empty"),
    ("run.json", "truncated"),
    ("run.json", "missing"),
]


@pytest.fixture(scope="module")
def runs(tiny_model_dir, corpus_file, tmp_path_factory):
    """An uninterrupted run, and one stopped at step 4 with checkpoints at steps 2 and 4."""
    root = tmp_path_factory.mktemp("damaged_checkpoints")
    run_recipe("tiny-pi", tiny_model_dir, corpus_file, root / "whole", **SETTINGS)
    run_recipe("tiny-pi", tiny_model_dir, corpus_file, root / "stopped", stop_after_steps=4, **SETTINGS)
    return root


def damaged_copy(runs, tmp_path, file: str, how: str, steps=(4,), seed: int = 0):
    out = tmp_path / "run"
    shutil.copytree(runs / "stopped", out)
    for step in steps:
        path = out / "checkpoints" / f"step-{step:07d}" / file
        if how == "missing":
            path.unlink()
        else:
            damage(path, how, np.random.default_rng(seed))
    return out


def resumes_from_the_older_checkpoint(runs, tmp_path, capsys, tiny_model_dir, corpus_file, file, how) -> bool:
    out = damaged_copy(runs, tmp_path, file, how)
    capsys.readouterr()
    run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, **SETTINGS)
    printed = capsys.readouterr().out
    warned = f"warning: checkpoint {out / 'checkpoints' / 'step-0000004'} is damaged" in printed
    return (
        warned
        and "resuming from step-0000002 instead" in printed
        and "at step 2." in printed
        and (out / "checkpoints" / "step-0000004.unusable").is_dir()
        and [m["loss"] for m in read_metrics(out)] == [m["loss"] for m in read_metrics(runs / "whole")]
    )


@pytest.mark.parametrize("file, how", FAST_CASES, ids=[f"{f}-{h}" for f, h in FAST_CASES])
def test_a_damaged_checkpoint_falls_back_to_the_previous_one(
    runs, tmp_path, capsys, tiny_model_dir, corpus_file, file, how
):
    assert resumes_from_the_older_checkpoint(runs, tmp_path, capsys, tiny_model_dir, corpus_file, file, how)


@pytest.mark.slow
def test_every_file_damaged_every_way_falls_back(runs, tmp_path_factory, capsys, tiny_model_dir, corpus_file):
    tally = FaultTally()
    for file in FILES:
        for how in (*DAMAGES, "missing"):
            tmp_path = tmp_path_factory.mktemp("case")
            tally.record(
                f"{file} {how}",
                resumes_from_the_older_checkpoint(runs, tmp_path, capsys, tiny_model_dir, corpus_file, file, how),
            )
    with capsys.disabled():
        print(f"\ndamaged checkpoints: {tally}")
    assert not tally.lost


def test_with_no_intact_checkpoint_the_run_stops_with_one_message_and_changes_nothing(
    runs, tmp_path, capsys, tiny_model_dir, corpus_file
):
    out = damaged_copy(runs, tmp_path, "optimizer.bin", "truncated", steps=(2, 4))
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    with pytest.raises(
        TrainingError,
        match=r"No checkpoint in .* can be resumed \(step-0000004: optimizer.bin has "
        r"[\d,]+ bytes where [\d,]+ were written; step-0000002: .*Nothing was changed",
    ):
        run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, **SETTINGS)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
    args = [
        "tiny-pi",
        f"model={tiny_model_dir}",
        f"data={corpus_file}",
        f"output_dir={out}",
        "seq_len=32",
        "micro_batch_size=2",
        "grad_accum_steps=2",
        "warmup_steps=1",
        "lr=1e-3",
        "progress_bar=false",
        *(f"{k}={v}" for k, v in SETTINGS.items()),
    ]
    capsys.readouterr()
    assert train_main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("lm-eval-longmem train: error: No checkpoint in")


def test_a_last_checkpoint_that_fails_to_load_with_none_older_stops_and_keeps_it(
    runs, tmp_path, tiny_model_dir, corpus_file
):
    out = damaged_copy(runs, tmp_path, "optimizer.bin", "zeroed")  # same size: only loading finds it
    shutil.rmtree(out / "checkpoints" / "step-0000002")
    with pytest.raises(TrainingError, match=r"step-0000004: accelerate could not load it"):
        run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, **SETTINGS)
    assert (out / "checkpoints" / "step-0000004").is_dir()


def test_a_metrics_line_cut_by_a_kill_is_dropped_on_resume(runs, tmp_path, tiny_model_dir, corpus_file):
    out = tmp_path / "run"
    shutil.copytree(runs / "stopped", out)
    with (out / "metrics.jsonl").open("a") as log:
        log.write('{"step": 5, "lo')
    run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, **SETTINGS)
    assert [m["loss"] for m in read_metrics(out)] == [m["loss"] for m in read_metrics(runs / "whole")]
