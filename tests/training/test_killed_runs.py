"""SIGKILL at any point of training, then the same command: the run resumes, its losses equal an
uninterrupted run's, and its export is complete (every file, weights equal, loads with
transformers), with nothing half-written left behind. All in the slow tier: two kills aimed at
the riskiest moments (a checkpoint being written, the export being written), and 24+ kills at
random points of several runs, counted and printed (`./scripts/test.sh --slow -s -k kills`)."""

from __future__ import annotations

import collections
import random
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from lm_eval_longmem_training.loop.progress import read_metrics
from tests.helpers.fault_injection import FaultTally
from tests.helpers.training_helpers import run_recipe
from tests.helpers.training_kills import (
    ENV,
    checkpoint_write,
    export_write,
    leftovers,
    random_trigger,
    resumed_step,
    run_until,
    train_command,
    where_it_landed,
)

FAST = {"max_steps": 20, "save_every": 5, "micro_batch_size": 1, "grad_accum_steps": 1, "ema_decay": 0.5}
SLOW = {
    "tiny-pi": {"max_steps": 60, "save_every": 3, "micro_batch_size": 1, "grad_accum_steps": 1, "ema_decay": 0.5},
    "tiny-longlora": {
        "max_steps": 40,
        "save_every": 4,
        "micro_batch_size": 1,
        "grad_accum_steps": 2,
        "keep_checkpoints": 1,
    },
}
LEFTOVER_SUFFIXES = (".partial", ".old", ".deleting")


def differences(run: Path, reference: Path) -> list[str]:
    """How a run's outcome differs from the uninterrupted reference's (empty: the same)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    problems = []
    if [m["loss"] for m in read_metrics(run)] != [m["loss"] for m in read_metrics(reference)]:
        problems.append("losses differ")
    files = (
        {str(p.relative_to(run / "export")) for p in (run / "export").rglob("*")}
        if (run / "export").is_dir()
        else set()
    )
    expected = {str(p.relative_to(reference / "export")) for p in (reference / "export").rglob("*")}
    if files != expected:
        return problems + [f"export files differ: missing {sorted(expected - files)}, extra {sorted(files - expected)}"]
    a, b = (load_file(str(d / "export" / "model.safetensors")) for d in (run, reference))
    if a.keys() != b.keys() or not all(torch.equal(a[k], b[k]) for k in a):
        problems.append("exported weights differ")
    AutoModelForCausalLM.from_pretrained(run / "export")
    AutoTokenizer.from_pretrained(run / "export")
    leftovers = [p.name for p in run.rglob("*") if p.name.endswith(LEFTOVER_SUFFIXES)]
    return problems + ([f"leftovers {leftovers}"] if leftovers else [])


@pytest.mark.slow  # 16 s; resume bit for bit is tested fast by tests/training/test_resume.py
def test_kills_while_writing_a_checkpoint_and_the_export_resume_exactly(tiny_model_dir, corpus_file, tmp_path):
    run_recipe("tiny-pi", tiny_model_dir, corpus_file, tmp_path / "whole", **FAST)
    out = tmp_path / "killed"
    command = train_command("tiny-pi", tiny_model_dir, corpus_file, out, **FAST)
    mid_save = run_until(command, checkpoint_write(out, 10), 0.0, tmp_path / "1.log")
    assert mid_save.killed, mid_save.output[-3000:]
    landed = [where_it_landed(out)]
    stale = frozenset(leftovers(out))  # the checkpoint folder the first kill left half-written
    # The kill aims at checkpoint 10's write; on a loaded machine it may land during a later one
    # (or just after it): the run must resume from the newest checkpoint that landed whole.
    newest = max(int(p.name.split("-")[1]) for p in (out / "checkpoints").glob("step-*") if p.name[5:].isdigit())
    mid_export = run_until(command, export_write(out, stale), 0.0, tmp_path / "2.log")
    assert newest >= 5 and resumed_step(mid_export.output) == newest, (newest, mid_export.output[-3000:])
    landed.append(where_it_landed(out, stale) if mid_export.killed else "too late: the run had ended")
    assert not (out / "export").exists() or landed[1] != "export write"  # never a half export under its name
    final = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr[-3000:]
    if landed[1] == "export write":  # (a loaded machine may finish the export before the kill lands)
        assert resumed_step(final.stdout) == 20 and "Exported to" in final.stdout  # the export again, no training
    assert differences(out, tmp_path / "whole") == []
    print(f"2 kills, landed: {landed}")


@pytest.mark.slow
def test_many_random_kills_never_lose_a_run(tiny_model_dir, corpus_file, tmp_path):
    rng = random.Random(23)
    tally, landed, references, runs = FaultTally(), collections.Counter(), {}, 0
    while tally.injected < 24:
        recipe = ("tiny-pi", "tiny-longlora")[runs % 2]
        settings = SLOW[recipe]
        if recipe not in references:
            references[recipe] = tmp_path / f"reference-{recipe}"
            run_recipe(recipe, tiny_model_dir, corpus_file, references[recipe], **settings)
        runs += 1
        out = tmp_path / f"run-{runs}"
        command = train_command(recipe, tiny_model_dir, corpus_file, out, **settings)
        kills = []
        for attempt in range(8):  # kill, run the same command again, kill again, ...
            stale = frozenset(leftovers(out))
            _, trigger, delay = random_trigger(rng, out, settings["max_steps"], settings["save_every"])
            result = run_until(command, trigger, delay, tmp_path / f"{runs}-{attempt}.log")
            if not result.killed:  # it finished first
                assert result.returncode == 0, result.output[-3000:]
                break
            kills.append(where_it_landed(out, stale))
        else:
            final = subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=600)
            assert final.returncode == 0, final.stderr[-3000:]
        problems = differences(out, references[recipe])
        for where in kills:
            tally.record(f"{recipe} {where}: {problems}", not problems)
            landed[where] += 1
    print(f"\n{tally}; kills landed: {dict(landed)}; over {runs} runs")
    assert not tally.lost
