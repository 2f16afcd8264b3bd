"""Each DeepSpeed config docs/training.md ships, run for real on a CPU process through `accelerate
launch --config_file` (DeepSpeed's CPU accelerator, gloo): it gets past `prepare` (the recipe's
batch written in), trains under its ZeRO stage with the optimizer offloaded, and equals the plain
loop at the same batch, losses and gradient norms alike. The norm is what shows a loss divided by
the accumulation steps twice (a quarter as large at 4 steps); the losses would hardly move, as
AdamW's steps do not depend on the gradient's scale.

One process, not two: on a machine without GPUs accelerate 1.15 finds no backend of its own, so
under DeepSpeed its state says one process in every process while DeepSpeed counts two, and
`prepare` stops: "train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step *
world_size 4 != 1 * 4 * 2".

Needs the `deepspeed` extra (skipped without it; not in `dev`). Its first run compiles DeepSpeed's
CPU Adam and shared-memory ops with g++ (about 6 minutes on 2 cores, cached in
~/.cache/torch_extensions); then about 30 s. The config dict alone is checked in the fast tier
without DeepSpeed by test_deepspeed_batch.py.
"""

from __future__ import annotations

import os
import subprocess

import pytest
import torch
import yaml

from lm_eval_longmem_training.loop.progress import read_metrics
from tests.helpers.cli_runs import BIN
from tests.helpers.training_helpers import run_recipe, shipped_deepspeed_configs, tiny_overrides

pytest.importorskip("deepspeed")

CONFIGS = shipped_deepspeed_configs()
STEPS = {"max_steps": 3, "save_every": 3, "max_grad_norm": 1.0}


@pytest.fixture(scope="module", params=range(len(CONFIGS)))
def runs(request, tiny_model_dir, corpus_file, tmp_path_factory):
    """The plain loop and the shipped config, one process each, micro-batch 2 at the config's
    accumulation steps, in fp32 (`--mixed_precision no`) so that the two can agree closely."""
    shipped = CONFIGS[request.param]
    accum = shipped["deepspeed_config"].get("gradient_accumulation_steps", 1)
    root = tmp_path_factory.mktemp("deepspeed")
    batch = {"micro_batch_size": 2, "grad_accum_steps": accum, **STEPS}
    run_recipe("tiny-pi", tiny_model_dir, corpus_file, root / "plain", **batch)
    config = root / "deepspeed.yaml"
    config.write_text(yaml.safe_dump({**shipped, "num_processes": 1}))
    flags = ["--config_file", str(config), "--num_processes", "1", "--num_machines", "1", "--mixed_precision", "no"]
    flags += ["--dynamo_backend", "no", "--main_process_port", str(29571 + request.param)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.pop("ACCELERATE_USE_CPU", None)  # it would make accelerate drop DeepSpeed
    overrides = tiny_overrides(tiny_model_dir, corpus_file, root / "ds", **batch)
    launch = [str(BIN / "accelerate"), "launch", *flags, "-m", "lm_eval_longmem_training", "tiny-pi", *overrides]
    proc = subprocess.run(launch, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return shipped, root


def test_the_checkpoint_is_deepspeeds(runs):
    """DeepSpeed's own layout: model states and the ZeRO-partitioned optimizer state, per rank."""
    _, root = runs
    checkpoint = root / "ds" / "checkpoints" / "step-0000003" / "pytorch_model"
    assert (checkpoint / "zero_pp_rank_0_mp_rank_00_model_states.pt").is_file()
    assert list(checkpoint.glob("*zero_pp_rank_0_mp_rank_00_optim_states.pt"))


def test_deepspeed_equals_the_plain_loop_losses_and_gradient_norms(runs):
    _, root = runs
    plain, ds = read_metrics(root / "plain"), read_metrics(root / "ds")
    assert [m["tokens"] for m in ds] == [m["tokens"] for m in plain]
    losses = torch.tensor([[m["loss"] for m in plain], [m["loss"] for m in ds]], dtype=torch.float64)
    assert (losses[0] - losses[1]).abs().max() <= 1e-5, losses
    norms = torch.tensor([[m["grad_norm"] for m in plain], [m["grad_norm"] for m in ds]], dtype=torch.float64)
    assert ((norms[1] / norms[0]) - 1).abs().max() <= 1e-4, norms  # divided twice: 1 / accumulation steps
