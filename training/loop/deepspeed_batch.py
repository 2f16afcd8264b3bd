"""The recipe's batch written into a DeepSpeed config before `prepare`, and DeepSpeed's own
gradient accumulation.

accelerate fills `train_micro_batch_size_per_gpu: auto` (what an accelerate YAML without a
DeepSpeed JSON gives) from a prepared dataloader. The loop prepares only the model and the
optimizer (its batches come from `BatchOrder`), so `prepare` would fail on any hardware with
"train_micro_batch_size_per_gpu ... auto". The recipe knows the micro batch and the accumulation
steps: `deepspeed_batch_config` writes them (and the clipping norm where it is `auto`); an
accumulation count in the config that differs from the recipe's is refused, never silently used.

DeepSpeed's engine divides the loss by its `gradient_accumulation_steps` itself and steps at the
boundary accelerate tells it (`sync_gradients`): `loss_for_backward` and `set_boundary` keep the
loss divided once and the step taken once per optimizer step.
"""

from __future__ import annotations

from ..errors import TrainingError


def is_deepspeed(accelerator) -> bool:
    return accelerator.distributed_type.name == "DEEPSPEED"


def deepspeed_batch_config(
    config: dict, micro_batch_size: int, grad_accum_steps: int, num_processes: int, max_grad_norm: float
) -> dict:
    """`config` (a DeepSpeed config dict) with the recipe's batch in place of `auto`; changed in place
    and returned. Raises TrainingError where the config's accumulation steps or micro batch are
    numbers other than the recipe's."""
    for key, value in (
        ("gradient_accumulation_steps", grad_accum_steps),
        ("train_micro_batch_size_per_gpu", micro_batch_size),
    ):
        given = config.get(key, "auto")
        if given not in ("auto", None) and int(given) != value:
            raise TrainingError(
                f"the DeepSpeed config has {key}={given} but the recipe's is {value}: "
                f"set the same value in both (or 'auto' in the DeepSpeed config)"
            )
        config[key] = value
    config["train_batch_size"] = micro_batch_size * grad_accum_steps * num_processes
    if config.get("gradient_clipping", "auto") == "auto":
        config["gradient_clipping"] = max_grad_norm
    return config


def set_deepspeed_batch(accelerator, recipe) -> None:
    """Before `prepare`: the recipe's batch into the DeepSpeed plugin's config (no-op otherwise)."""
    if not is_deepspeed(accelerator):
        return
    config = accelerator.state.deepspeed_plugin.deepspeed_config
    deepspeed_batch_config(
        config, recipe.micro_batch_size, recipe.grad_accum_steps, accelerator.num_processes, recipe.max_grad_norm
    )
    accelerator.gradient_accumulation_steps = recipe.grad_accum_steps


def loss_for_backward(accelerator, loss, grad_accum_steps: int):
    """The micro-batch loss divided by the accumulation steps once: by us, or by DeepSpeed's engine."""
    return loss if is_deepspeed(accelerator) else loss / grad_accum_steps


def set_boundary(accelerator, last: bool) -> None:
    """DeepSpeed steps its optimizer inside `backward` when accelerate says gradients sync: only at
    the last micro-batch of a step (the loop reads micro-batches itself, not through `accumulate`)."""
    if is_deepspeed(accelerator):
        accelerator.gradient_state._set_sync_gradients(last)
