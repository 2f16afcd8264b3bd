"""`accelerate launch` with two CPU processes (gloo) follows the one-process run at the same global
batch: one process reads micro-batches of 2, each of the two reads its half."""

import subprocess

import pytest
import torch
from safetensors.torch import load_file

from lm_eval_longmem_training.loop.progress import read_metrics
from tests.helpers.cli_runs import two_cpu_processes
from tests.helpers.training_helpers import run_recipe, tiny_overrides


@pytest.mark.slow  # 12 s, two gloo processes; the batch split: test_resume.py's BatchOrder cases
def test_two_processes_equal_one_at_the_same_global_batch(tiny_model_dir, corpus_file, tmp_path):
    steps = {"max_steps": 3, "grad_accum_steps": 2}
    run_recipe("tiny-yarn", tiny_model_dir, corpus_file, tmp_path / "one", micro_batch_size=2, **steps)
    launch, env = two_cpu_processes(29517, "lm_eval_longmem_training")
    command = [
        *launch,
        "tiny-yarn",
        *tiny_overrides(tiny_model_dir, corpus_file, tmp_path / "two", micro_batch_size=1, **steps),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    one, two = read_metrics(tmp_path / "one"), read_metrics(tmp_path / "two")
    assert [m["tokens"] for m in two] == [m["tokens"] for m in one]
    assert torch.allclose(torch.tensor([m["loss"] for m in two]), torch.tensor([m["loss"] for m in one]), rtol=1e-5)
    a, b = (load_file(str(tmp_path / run / "export" / "model.safetensors")) for run in ("one", "two"))
    assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)


@pytest.mark.slow
def test_clex_trains_on_two_processes_where_one_draws_a_factor_that_leaves_the_ode_unused(
    tiny_model_dir, corpus_file, tmp_path
):
    """Each process draws its own t' per forward; at t' = 1 the ODE's U and D are not in that process's
    graph, which plain DDP refuses ("Expected to have finished reduction ..."): approach=clex asks DDP
    to look for unused parameters (with it switched off this run fails with that error)."""
    launch, env = two_cpu_processes(29527, "lm_eval_longmem_training")
    overrides = tiny_overrides(tiny_model_dir, corpus_file, tmp_path / "two", micro_batch_size=1, max_steps=4)
    proc = subprocess.run([*launch, "tiny-clex", *overrides], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert len(read_metrics(tmp_path / "two")) == 4
    weights = load_file(str(tmp_path / "two" / "export" / "model.safetensors"))
    assert weights["model.clex_layer.proj_func.ode_down_proj"].abs().sum() > 0
