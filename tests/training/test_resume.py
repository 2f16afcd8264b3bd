"""Resumable runs: a run stopped after a checkpoint and resumed follows the uninterrupted run's
loss trajectory bit for bit on the CPU; a changed recipe is refused and nothing is lost. (Runs
killed at any point: test_killed_runs.py; damaged checkpoints: test_damaged_checkpoints.py.)"""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from lm_eval_longmem_training.checkpoints.resumable import checkpoint_dirs
from lm_eval_longmem_training.data.batch_order import BatchOrder
from lm_eval_longmem_training.errors import TrainingError
from lm_eval_longmem_training.loop.progress import read_metrics
from tests.helpers.training_helpers import run_recipe


def test_stopped_and_resumed_equals_uninterrupted(tiny_model_dir, corpus_file, tmp_path):
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    run_recipe("tiny-yarn", tiny_model_dir, corpus_file, whole, max_steps=6, save_every=3, ema_decay=0.5)
    stopped = run_recipe(
        "tiny-yarn", tiny_model_dir, corpus_file, parts, max_steps=6, save_every=3, ema_decay=0.5, stop_after_steps=4
    )
    assert stopped["steps"] == 4 and "export" not in stopped
    with (parts / "metrics.jsonl").open("a") as log:  # as if killed after logging a step past the checkpoint
        log.write(json.dumps({"step": 5, "loss": 0.0}) + "\n")
    resumed = run_recipe("tiny-yarn", tiny_model_dir, corpus_file, parts, max_steps=6, save_every=3, ema_decay=0.5)
    assert resumed["steps"] == 6
    losses = [m["loss"] for m in read_metrics(whole)]
    assert [m["loss"] for m in read_metrics(parts)] == losses and len(losses) == 6
    assert [m["step"] for m in read_metrics(parts)] == list(range(1, 7))
    a, b = (load_file(str(d / "export" / "model.safetensors")) for d in (whole, parts))
    assert all(torch.equal(a[k], b[k]) for k in a)  # the exported weight average too


def test_the_export_holds_the_weight_average(tiny_model_dir, corpus_file, tmp_path):
    """One step at decay 0.5: the exported average lies halfway between the base weights and the
    trained ones (ema_decay 1, which froze the average, is out of its range [0, 1))."""
    one_step = {"max_steps": 1, "warmup_steps": 0}
    plain = run_recipe("tiny-pi", tiny_model_dir, corpus_file, tmp_path / "plain", **one_step)
    averaged = run_recipe("tiny-pi", tiny_model_dir, corpus_file, tmp_path / "ema", **one_step, ema_decay=0.5)
    base = load_file(str(tiny_model_dir / "model.safetensors"))
    trained, average = (load_file(str(Path(s["export"]) / "model.safetensors")) for s in (plain, averaged))
    assert not all(torch.equal(trained[k], base[k]) for k in base)
    assert all(torch.equal(average[k], torch.lerp(base[k], trained[k], 0.5)) for k in base)


def test_resuming_with_another_recipe_is_refused_and_keeps_the_checkpoint(tiny_model_dir, corpus_file, tmp_path):
    out = tmp_path / "run"
    run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, max_steps=4, stop_after_steps=2)
    before = [p.name for p in checkpoint_dirs(out)]
    with pytest.raises(TrainingError, match=r"another recipe \(lr: checkpoint 0.001 vs recipe 0.002") as err:
        run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, max_steps=4, lr=2e-3)
    assert "output_dir=" in str(err.value)
    assert [p.name for p in checkpoint_dirs(out)] == before
    fresh = run_recipe("tiny-pi", tiny_model_dir, corpus_file, out, max_steps=2, lr=2e-3, resume="never")
    assert fresh["steps"] == 2
    (aside,) = out.glob("previous-*")
    assert [p.name for p in checkpoint_dirs(aside)] == before


def test_a_hub_dataset_offline_fails_fast_with_the_fix(tiny_model_dir, tmp_path):
    with pytest.raises(TrainingError, match="Hub cannot be reached.*data=shakespeare"):
        run_recipe("tiny-pi", tiny_model_dir, "someone/not-cached-corpus", tmp_path / "run")


def test_batches_depend_on_the_global_batch_only():
    chunks = np.arange(40 * 4).reshape(40, 4)
    one = BatchOrder(chunks, micro_batch_size=4, grad_accum_steps=2, num_processes=1, process_index=0, seed=3)
    two = [
        BatchOrder(chunks, micro_batch_size=2, grad_accum_steps=2, num_processes=2, process_index=r, seed=3)
        for r in (0, 1)
    ]
    for step in range(12):  # past one epoch: epochs reshuffle
        for micro in range(2):
            together = torch.cat([order.micro_batch(step, micro) for order in two])
            assert torch.equal(one.micro_batch(step, micro), together)
    seen = torch.cat([one.micro_batch(s, m) for s in range(5) for m in range(2)])[:, 0] // 4
    assert sorted(seen.tolist()) == list(range(40))  # the first epoch reads every chunk once


def test_a_tied_embeddings_model_resumes_exactly_without_the_shared_tensor_notice(corpus_file, tmp_path, caplog):
    """SmolLM2 ties its input and output embeddings: safetensors keeps one copy at each
    checkpoint (accelerate's 'Removed shared tensor' notice, silenced), and a resumed run still
    follows the uninterrupted one."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from tests.helpers.tiny_llama import build_tiny_model

    untied = build_tiny_model(tmp_path / "untied")
    config = AutoConfig.from_pretrained(untied)
    config.tie_word_embeddings = True
    tied = tmp_path / "tied"
    AutoModelForCausalLM.from_pretrained(untied, config=config).save_pretrained(tied)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (untied / name).exists():
            (tied / name).write_bytes((untied / name).read_bytes())
    with caplog.at_level("WARNING"):
        run_recipe("tiny-pi", tied, corpus_file, tmp_path / "whole", max_steps=4, save_every=2)
        run_recipe("tiny-pi", tied, corpus_file, tmp_path / "parts", max_steps=4, save_every=2, stop_after_steps=2)
        run_recipe("tiny-pi", tied, corpus_file, tmp_path / "parts", max_steps=4, save_every=2)
    assert not [r for r in caplog.records if "shared tensor" in r.getMessage()]
    assert [m["loss"] for m in read_metrics(tmp_path / "parts")] == [
        m["loss"] for m in read_metrics(tmp_path / "whole")
    ]
