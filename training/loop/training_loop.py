"""The training loop: one script for one process or many (`accelerate launch`), resumable.

Each optimizer step reads `grad_accum_steps` micro-batches per process from `BatchOrder`
(gradients synchronized on the last only), clips, steps AdamW and the schedule, and logs. The
scheduler is stepped once per optimizer step and left unwrapped by accelerate (whose wrapper
would step it once per process), so a run's schedule does not depend on the process count.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from pathlib import Path

import torch

from lm_eval_longmem.common.atomic_files import fixed_partial_path, replace_folder
from lm_eval_longmem.models.checkpoint.model_types import register_model_types

from ..approaches import get_approach
from ..checkpoints.resumable import RunProgress, load_newest_loadable, save_checkpoint
from ..data.batch_order import BatchOrder
from ..data.packing import packed_chunks
from ..data.text_sources import open_text_source
from ..recipes.loading import check_recipe
from ..recipes.preflight import check_files
from ..recipes.recipe import Recipe, to_plain
from .cpu_fsdp import use_fsdp_on_cpu
from .deepspeed_batch import loss_for_backward, set_boundary, set_deepspeed_batch
from .optimization import make_optimizer, make_scheduler, mixed_precision_for
from .progress import TrainingLog
from .run_folder import EXPORT, finished_run, prepare_output_dir
from .weight_average import WeightAverage


def train(recipe: Recipe, recipe_source: str = "") -> dict:
    """Run (or resume) `recipe`; returns a summary (steps, tokens, export directory; `finished`
    when an earlier run had already done all of it and nothing was trained or written)."""
    from accelerate import Accelerator
    from accelerate.utils import set_seed

    check_recipe(recipe)
    register_model_types()  # a base model of a type transformers lacks (FoX's, the Landmark study's)
    check_files(recipe)
    output_dir = Path(recipe.output_dir)
    trackers = None if recipe.log_with in ("", "none") else recipe.log_with.split(",")
    approach = get_approach(recipe.approach)
    accelerator = Accelerator(
        mixed_precision=mixed_precision_for(recipe.mixed_precision),
        log_with=trackers,
        project_dir=str(output_dir),
        kwargs_handlers=ddp_kwargs(approach),
    )
    if use_fsdp_on_cpu(accelerator):  # CPU processes only: accelerate itself would drop the FSDP config
        version = accelerator.state.fsdp_plugin.fsdp_version
        accelerator.print(f"FSDP{version} on {accelerator.num_processes} CPU processes.")
    resume_from = prepare_output_dir(accelerator, output_dir, recipe)
    last_step = recipe.max_steps if not recipe.stop_after_steps else min(recipe.max_steps, recipe.stop_after_steps)
    finished = resume_from is not None and finished_run(resume_from, recipe, last_step)
    if finished:
        end_processes(accelerator)
        return finished
    set_seed(recipe.seed)

    with accelerator.main_process_first():
        trainable = approach.build(recipe)
        chunks = load_chunks(recipe, trainable.tokenizer, accelerator.num_processes)
    model = trainable.model
    set_use_cache(model, False)
    if recipe.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    optimizer = make_optimizer(approach.param_groups(trainable, recipe), recipe)
    scheduler = make_scheduler(optimizer, recipe)
    set_deepspeed_batch(accelerator, recipe)  # no dataloader is prepared to tell DeepSpeed the batch
    model, optimizer = accelerator.prepare(model, optimizer)
    progress = RunProgress()
    accelerator.register_for_checkpointing(scheduler, progress)
    average = WeightAverage(accelerator.unwrap_model(model), recipe.ema_decay) if recipe.ema_decay else None
    if average is not None:
        accelerator.register_for_checkpointing(average)
    if resume_from is not None:
        resume_from = load_newest_loadable(accelerator, output_dir, resume_from)
        accelerator.print(f"Resumed from {resume_from} at step {progress.step}.")
    accelerator.init_trackers(recipe.name, config={k: str(v) for k, v in to_plain(recipe).items()})

    order = BatchOrder(
        chunks,
        recipe.micro_batch_size,
        recipe.grad_accum_steps,
        accelerator.num_processes,
        accelerator.process_index,
        recipe.seed,
    )
    tokens_per_step = order.samples_per_step * recipe.seq_len
    log = TrainingLog(accelerator, output_dir, progress.step, recipe.max_steps, recipe.progress_bar)
    model.train()
    started = time.perf_counter()
    first_step = progress.step
    while progress.step < last_step:
        loss, grad_norm = train_step(accelerator, model, optimizer, scheduler, order, progress.step, recipe)
        if average is not None:
            average.update(accelerator.unwrap_model(model))
        progress.step += 1
        progress.tokens += tokens_per_step
        log.step(
            progress.step,
            loss,
            scheduler.get_last_lr()[0],
            tokens_per_step,
            progress.tokens,
            write=progress.step % recipe.log_every == 0 or progress.step == last_step,
            grad_norm=grad_norm,
        )
        # the last step is always saved: a killed export resumes from it, a larger max_steps continues it
        if progress.step == last_step or (recipe.save_every and progress.step % recipe.save_every == 0):
            save_checkpoint(accelerator, model, output_dir, recipe, progress)
    log.close()
    elapsed = time.perf_counter() - started
    summary = {
        "steps": progress.step,
        "tokens": progress.tokens,
        "tokens_per_second": (progress.step - first_step) * tokens_per_step / max(elapsed, 1e-9),
    }
    if progress.step < recipe.max_steps:
        accelerator.print(
            f"Stopped at step {progress.step} (stop_after_steps); resume with the same command "
            "without stop_after_steps (or with a larger one)."
        )
    elif recipe.export:
        if average is not None:
            average.copy_to(accelerator.unwrap_model(model))
        summary["export"] = str(export_run(accelerator, approach, trainable, model, recipe, recipe_source, progress))
    end_processes(accelerator)
    return summary


def ddp_kwargs(approach) -> list:
    """DDP's settings: an approach whose forwards can leave parameters unused makes DDP look for them."""
    if not approach.has_unused_parameters:
        return []
    from accelerate.utils import DistributedDataParallelKwargs

    return [DistributedDataParallelKwargs(find_unused_parameters=True)]


def end_processes(accelerator) -> None:
    """Stop trackers and the process group, letting gloo's worker threads go idle first.

    After the last barrier a gloo worker thread still destroys the barrier's work object, which
    takes the GIL. If the process group is freed meanwhile (the DDP model goes when `train`
    returns), its destructor joins that thread while holding the GIL: a deadlock, seen as a
    two-process CPU run that wrote its export and never exited (torch 2.13). A short GIL-free
    wait lets the worker finish first."""
    if accelerator.num_processes > 1:
        time.sleep(0.2)
    accelerator.end_training()


def train_step(
    accelerator, model, optimizer, scheduler, order: BatchOrder, step: int, recipe: Recipe
) -> tuple[float, float | None]:
    """One optimizer step over `grad_accum_steps` micro-batches: the loss averaged over processes,
    and the gradient norm before clipping (None without clipping). The norm shows what the loss
    cannot: a gradient divided by the accumulation steps twice is half as large, yet AdamW's steps,
    and so the losses, hardly change."""
    total = torch.zeros((), device=accelerator.device)
    for micro in range(recipe.grad_accum_steps):
        batch = order.micro_batch(step, micro).to(accelerator.device)
        last = micro == recipe.grad_accum_steps - 1
        with contextlib.nullcontext() if last else accelerator.no_sync(model), accelerator.autocast():
            loss = model(input_ids=batch, labels=batch).loss
        set_boundary(accelerator, last)
        accelerator.backward(loss_for_backward(accelerator, loss, recipe.grad_accum_steps))
        total += loss.detach() / recipe.grad_accum_steps
    grad_norm = None
    if recipe.max_grad_norm > 0:  # DeepSpeed clips inside its step and reports the norm it clipped
        grad_norm = accelerator.clip_grad_norm_(model.parameters(), recipe.max_grad_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return accelerator.reduce(total, reduction="mean").item(), None if grad_norm is None else float(grad_norm)


def set_use_cache(model, value: bool) -> None:
    """The KV cache is useless in training; the export should generate with it."""
    config = getattr(model, "config", None)
    if config is not None:
        config.use_cache = value


def load_chunks(recipe: Recipe, tokenizer, num_processes: int):
    source = open_text_source(
        recipe.data,
        config=recipe.data_config,
        split=recipe.data_split,
        text_column=recipe.text_column,
        seed=recipe.seed,
        seq_len=recipe.seq_len,
        tokenizer=tokenizer,
    )
    needed = recipe.max_steps * recipe.micro_batch_size * recipe.grad_accum_steps * num_processes * recipe.seq_len
    return packed_chunks(source, tokenizer, recipe.seq_len, max_tokens=recipe.data_max_tokens or needed)


def export_run(
    accelerator, approach, trainable, model, recipe: Recipe, recipe_source: str, progress: RunProgress
) -> Path:
    """Write the export beside its place (`export.partial`) and rename it in when complete: a kill
    at any moment leaves the previous export or none, never one missing files."""
    directory = Path(recipe.output_dir) / EXPORT
    partial = fixed_partial_path(directory)
    accelerator.wait_for_everyone()
    unwrapped = accelerator.unwrap_model(model)
    sharded = accelerator.distributed_type.name in ("FSDP", "DEEPSPEED")
    state_dict = accelerator.get_state_dict(model) if sharded else None  # every process takes part
    if accelerator.is_main_process:
        run_record = {
            "recipe": recipe.name,
            "recipe_file": recipe_source,
            "approach": recipe.approach,
            "base_model": recipe.model,
            "data": recipe.data,
            "seq_len": recipe.seq_len,
            "steps": progress.step,
            "tokens": progress.tokens,
            "recipe_values": json.loads(json.dumps(to_plain(recipe))),
        }
        set_use_cache(unwrapped, True)
        shutil.rmtree(partial, ignore_errors=True)
        approach.export(trainable, unwrapped, partial, run_record, state_dict)
        replace_folder(partial, directory)
        accelerator.print(f"Exported to {directory}: lm_eval --model longmem --model_args pretrained={directory} ...")
    accelerator.wait_for_everyone()
    return directory
