"""The DeepSpeed config shipped in docs/training.md gets the recipe's batch before `prepare` (it
failed there on any hardware: `train_micro_batch_size_per_gpu` stayed `auto`), and the loss is
divided by the accumulation steps once. Checked on the config dict the loop hands accelerate:
deepspeed itself is not installed in the test environment."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from lm_eval_longmem_training.errors import TrainingError
from lm_eval_longmem_training.loop.deepspeed_batch import deepspeed_batch_config, loss_for_backward
from tests.helpers.training_helpers import shipped_deepspeed_configs


def plugin_config(accelerate_config: dict) -> dict:
    """The DeepSpeed config accelerate builds from the YAML's deepspeed_config (as `launch` does)."""
    from accelerate.utils import DeepSpeedPlugin

    return DeepSpeedPlugin(**accelerate_config["deepspeed_config"]).deepspeed_config


def test_docs_ship_a_deepspeed_config():
    assert shipped_deepspeed_configs()


@pytest.mark.parametrize("index", range(len(shipped_deepspeed_configs())))
def test_shipped_config_gets_the_recipes_batch(index):
    accelerate_config = shipped_deepspeed_configs()[index]
    config = plugin_config(accelerate_config)
    assert config["train_micro_batch_size_per_gpu"] == "auto"  # what made prepare fail
    accum = accelerate_config["deepspeed_config"].get("gradient_accumulation_steps", 1)
    processes = accelerate_config["num_processes"]
    deepspeed_batch_config(config, 2, accum, processes, 1.0)
    assert config["train_micro_batch_size_per_gpu"] == 2
    assert config["gradient_accumulation_steps"] == accum
    assert config["train_batch_size"] == 2 * accum * processes
    assert "auto" not in (config["train_batch_size"], config["gradient_clipping"])


def test_a_different_accumulation_count_is_refused():
    config = {"gradient_accumulation_steps": 4, "train_micro_batch_size_per_gpu": "auto"}
    with pytest.raises(TrainingError, match="gradient_accumulation_steps=4 but the recipe's is 2"):
        deepspeed_batch_config(config, 1, 2, 8, 1.0)


def test_the_loss_is_divided_once():
    loss = torch.tensor(6.0)
    deepspeed = SimpleNamespace(distributed_type=SimpleNamespace(name="DEEPSPEED"))
    ddp = SimpleNamespace(distributed_type=SimpleNamespace(name="MULTI_CPU"))
    assert loss_for_backward(ddp, loss, 3).item() == 2.0
    assert loss_for_backward(deepspeed, loss, 3).item() == 6.0  # DeepSpeed's engine divides by its own count
