"""The end of a run: its last step is always checkpointed, so the same command again says it is
done and touches nothing, a larger max_steps continues it, and an export lost to a kill is
written again without training. The export appears whole or not at all (atomic_files)."""

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from lm_eval_longmem.common.atomic_files import tidy_leftovers
from lm_eval_longmem_training.checkpoints.resumable import checkpoint_dirs
from lm_eval_longmem_training.cli import done_line
from lm_eval_longmem_training.errors import TrainingError
from lm_eval_longmem_training.loop.progress import read_metrics
from tests.helpers.training_helpers import run_recipe

SAME_DATA = {"data_max_tokens": 2048}  # the packed chunks (so the batch order) do not depend on max_steps


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.stat().st_size) for p in folder.rglob("*")}


def test_a_finished_run_says_so_and_writes_nothing(tiny_model_dir, corpus_file, tmp_path):
    out = tmp_path / "run"
    run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, max_steps=4, save_every=3)
    assert [p.name for p in checkpoint_dirs(out)] == ["step-0000003", "step-0000004"]  # the last step is kept
    before = snapshot(out)
    again = run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, max_steps=4, save_every=3)
    assert again["finished"] and again["steps"] == 4 and again["export"] == str(out / "export")
    assert snapshot(out) == before
    assert done_line(again) == (
        f"Already finished: 4 of max_steps=4 steps, exported to {out / 'export'}; nothing "
        "trained or written. A larger max_steps= continues this run."
    )


def test_a_larger_max_steps_continues_from_the_last_step(tiny_model_dir, corpus_file, tmp_path, capsys):
    whole = run_recipe("tiny-pi", tiny_model_dir, corpus_file, tmp_path / "whole", max_steps=6, **SAME_DATA)
    run_recipe("tiny-pi", tiny_model_dir, corpus_file, tmp_path / "parts", max_steps=3, **SAME_DATA)
    capsys.readouterr()
    continued = run_recipe("tiny-pi", tiny_model_dir, corpus_file, tmp_path / "parts", max_steps=6, **SAME_DATA)
    assert "Resumed from" in capsys.readouterr().out and continued["steps"] == 6
    assert [m["loss"] for m in read_metrics(tmp_path / "parts")] == [
        m["loss"] for m in read_metrics(tmp_path / "whole")
    ]
    a, b = (load_file(str(Path(s["export"]) / "model.safetensors")) for s in (whole, continued))
    assert all(torch.equal(a[k], b[k]) for k in a)
    config = json.loads((tmp_path / "parts" / "export" / "config.json").read_text())
    assert config["longmem_training"]["steps"] == 6


def test_an_export_lost_to_a_kill_is_written_again_without_training(tiny_model_dir, corpus_file, tmp_path, capsys):
    out = tmp_path / "run"
    run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, max_steps=4, ema_decay=0.5)
    complete = snapshot(out / "export")
    weights = load_file(str(out / "export" / "model.safetensors"))
    shutil.move(str(out / "export"), str(out / "export.partial"))  # as a kill before the rename leaves it
    (out / "export.partial" / "tokenizer.json").unlink()
    metrics = (out / "metrics.jsonl").read_text()
    capsys.readouterr()
    again = run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, max_steps=4, ema_decay=0.5)
    assert "Resumed from" in capsys.readouterr().out and not again.get("finished")
    assert (out / "metrics.jsonl").read_text() == metrics  # nothing trained
    assert not (out / "export.partial").exists() and set(snapshot(out / "export")) == set(complete)
    rewritten = load_file(str(out / "export" / "model.safetensors"))
    assert all(torch.equal(weights[k], rewritten[k]) for k in weights)  # the weight average again, not the last weights


def test_a_checkpoint_past_max_steps_is_refused_and_stop_after_steps_reached_is_done(
    tiny_model_dir, corpus_file, tmp_path
):
    out = tmp_path / "run"
    run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, max_steps=6, stop_after_steps=4)
    stopped = run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, max_steps=6, stop_after_steps=3)
    assert stopped["finished"] and stopped["steps"] == 4 and "export" not in stopped
    assert "Already at step 4 (stop_after_steps=3): nothing to do" in stopped["message"]
    with pytest.raises(TrainingError, match="step-0000004 is at step 4, past max_steps=2.*Give max_steps=4 or more"):
        run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, max_steps=2)


def test_leftovers_of_a_kill_are_tidied_and_a_replaced_folder_comes_back(tmp_path):
    for name in ("export.partial", "export.old", "step-1.deleting", "notes.old", "export-mine.partial"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_text(name)
    (tmp_path / "metrics.jsonl.partial").write_text("half")
    tidy_leftovers(tmp_path, r"export|metrics\.jsonl|step-\d+")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export", "export-mine.partial", "notes.old"]
    assert (tmp_path / "export" / "f").read_text() == "export.old"  # the previous export, whole
