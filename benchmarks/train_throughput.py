"""Training throughput: our accelerate loop vs a plain `transformers.Trainer`, same model, data,
batch, optimizer and schedule, in one process. Prints tokens/s of each and the ratio (target >= 1.0).

Both train the recipe's model (loaded once per run the same way, `load_pretrained`) on the same
packed chunks. Per-step wall times after the first `--warmup` steps are compared by their medians,
and the two loops alternate over `--repeats` rounds, so CPU contention hits both alike.

    nice -n 5 python benchmarks/train_throughput.py                   # SmolLM2-135M, 256 tokens
    nice -n 5 python benchmarks/train_throughput.py --recipe tiny-yarn --seq-len 1024 --steps 10
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch  # noqa: E402

from lm_eval_longmem_training.approaches.base import load_pretrained  # noqa: E402
from lm_eval_longmem_training.data.packing import packed_chunks  # noqa: E402
from lm_eval_longmem_training.data.text_sources import open_text_source  # noqa: E402
from lm_eval_longmem_training.loop.progress import read_metrics  # noqa: E402
from lm_eval_longmem_training.loop.training_loop import train  # noqa: E402
from lm_eval_longmem_training.recipes.loading import load_recipe  # noqa: E402


def ours(recipe_name: str, overrides: list[str], warmup: int) -> float:
    """Median tokens/s per step of our loop (from its metrics.jsonl)."""
    with tempfile.TemporaryDirectory() as out:
        recipe = load_recipe(
            recipe_name,
            [*overrides, f"output_dir={out}", "save_every=0", "export=false", "progress_bar=false", "resume=never"],
        )
        train(recipe)
        rates = [m["tokens_per_second"] for m in read_metrics(out)][warmup:]
    return statistics.median(rates)


class StepClock:
    """Trainer callback: wall time of each optimizer step."""

    def __new__(cls):
        from transformers import TrainerCallback

        class _Clock(TrainerCallback):
            def __init__(self):
                self.times, self.last = [], None

            def on_step_begin(self, args, state, control, **kwargs):
                self.last = self.last or time.perf_counter()

            def on_step_end(self, args, state, control, **kwargs):
                now = time.perf_counter()
                self.times.append(now - self.last)
                self.last = now

        return _Clock()


def trainer(recipe_name: str, overrides: list[str], warmup: int) -> float:
    """Median tokens/s per step of `transformers.Trainer` on the same model, chunks and batch."""
    from transformers import Trainer, TrainingArguments

    recipe = load_recipe(recipe_name, overrides)
    trainable = load_pretrained(recipe)
    chunks = packed_chunks(open_text_source(recipe.data), trainable.tokenizer, recipe.seq_len)
    rows = [
        {"input_ids": torch.from_numpy(c.astype("int64")), "labels": torch.from_numpy(c.astype("int64"))}
        for c in chunks
    ]
    clock = StepClock()
    cuda = torch.cuda.is_available()
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            per_device_train_batch_size=recipe.micro_batch_size,
            gradient_accumulation_steps=recipe.grad_accum_steps,
            max_steps=recipe.max_steps,
            learning_rate=recipe.lr,
            lr_scheduler_type=recipe.lr_schedule,
            warmup_steps=recipe.warmup_steps,
            weight_decay=recipe.weight_decay,
            adam_beta1=recipe.adam_beta1,
            adam_beta2=recipe.adam_beta2,
            adam_epsilon=recipe.adam_eps,
            max_grad_norm=recipe.max_grad_norm,
            optim="adamw_torch",
            save_strategy="no",
            report_to=[],
            logging_steps=10**6,
            disable_tqdm=True,
            use_cpu=not cuda,
            bf16=cuda and torch.cuda.is_bf16_supported(),
            seed=recipe.seed,
            dataloader_num_workers=0,
        )
        trainable.model.config.use_cache = False
        Trainer(model=trainable.model, args=args, train_dataset=rows, callbacks=[clock]).train()
    tokens = recipe.micro_batch_size * recipe.grad_accum_steps * recipe.seq_len
    return statistics.median(tokens / t for t in clock.times[warmup:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", default="tiny-pi")
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--grad-accum", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=1, help="first steps left out of the median")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("overrides", nargs="*", help="further recipe key=value overrides (e.g. model=<dir>)")
    args = parser.parse_args()
    overrides = [
        f"seq_len={args.seq_len}",
        f"micro_batch_size={args.micro_batch}",
        f"grad_accum_steps={args.grad_accum}",
        f"max_steps={args.steps}",
        *args.overrides,
    ]
    results = {"ours": [], "trainer": []}
    for _ in range(args.repeats):
        results["ours"].append(ours(args.recipe, overrides, args.warmup))
        results["trainer"].append(trainer(args.recipe, overrides, args.warmup))
    a, b = statistics.median(results["ours"]), statistics.median(results["trainer"])
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU ({torch.get_num_threads()} threads)"
    print(f"recipe {args.recipe}, {' '.join(overrides)}, {device}")
    print(f"ours: {a:,.0f} tokens/s   transformers.Trainer: {b:,.0f} tokens/s   ratio ours/Trainer: {a / b:.2f}x")
    print(f"(per repeat: ours {[round(x) for x in results['ours']]}, Trainer {[round(x) for x in results['trainer']]})")


if __name__ == "__main__":
    main()
