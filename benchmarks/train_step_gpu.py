"""A few bf16 training steps of the `fox` and `yarn` recipe shapes with gradient checkpointing, through
the real training loop, so the GPU recipes are known to run (dtype, checkpointing, memory, speed)
before anyone rents GPUs for them.

Each recipe runs in its own process (an out-of-memory or a CUDA fault in one leaves the next
intact) as `lm_eval_longmem_training.loop.training_loop.train` with the shipped recipe plus
overrides: the embedded Shakespeare corpus, `--steps` steps, `gradient_checkpointing=true`, nothing saved. A
`from_scratch` recipe (fox) is built by its approach, randomly initialised as always; a recipe
that fine-tunes a Hub model (yarn: Llama-2-7B) gets a random-weight model of that shape saved
locally with the embedded tokenizer, and `model=` points at it, so the approach's own loading and
method preparation run (nothing is downloaded). Measured: tokens/s (median of the run's
`metrics.jsonl` after the first step), peak GPU memory, the loss; checked: parameter and compute
dtype (the lm_head output under autocast), `is_gradient_checkpointing` and that a decoder layer
really runs twice per micro-batch (forward + recomputation). A full shape whose fp32 weights,
gradients and AdamW states alone exceed the GPU's memory is reported as not fitting instead of
run, and then run cut to `--fallback-layers` layers (same width, length, vocabulary).

`--tiny` shrinks each shape to 2 blocks x 64 at 128 tokens (CPU seconds); on the CPU it also runs
the same global batch as single-sequence micro-batches with gradient accumulation: the first
step's reported loss must not change (it would halve if the loss were divided by the
accumulation twice).

    python benchmarks/train_step_gpu.py --device cuda --out-json train_step.json
    nice -n 5 python benchmarks/train_step_gpu.py --tiny --device cpu
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from random_checkpoint import save_random_checkpoint  # benchmarks/ is on sys.path when run as a script

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# Hub models a recipe fine-tunes, as config fields: built with random weights, never downloaded.
HUB_SHAPES = {
    "meta-llama/Llama-2-7b-hf": dict(
        model_type="llama",
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        max_position_embeddings=4096,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        vocab_size=32000,
        tie_word_embeddings=False,
    ),
}
TINY_WIDTH, TINY_HEADS, TINY_LAYERS, TINY_SEQ_LEN = 64, 4, 2, 128
BYTES_PER_TRAINED_PARAM = 16  # fp32 weight + gradient + AdamW m and v
GIB = 2**30


def architecture_edits(fields: dict, tiny: bool, layers: int) -> dict:
    """Config fields that shrink an architecture (`--tiny`) or cut its depth (`--layers`)."""
    edits = {}
    if tiny:
        sizes = {
            "hidden_size": TINY_WIDTH,
            "num_hidden_layers": TINY_LAYERS,
            "num_heads": TINY_HEADS,
            "num_attention_heads": TINY_HEADS,
            "num_key_value_heads": TINY_HEADS,
            "head_dim": TINY_WIDTH // TINY_HEADS,
        }
        edits = {k: v for k, v in sizes.items() if k in fields}
        if "intermediate_size" in fields:
            edits["intermediate_size"] = round(fields["intermediate_size"] * TINY_WIDTH / fields["hidden_size"])
    if layers:
        edits["num_hidden_layers"] = layers
    return edits


def recipe_overrides(args, output_dir: str, micro_batch: int, grad_accum: int) -> list[str]:
    """The recipe's training settings, shortened to a benchmark: a few steps, nothing written but metrics."""
    values = {
        "data": "shakespeare",
        "max_steps": args.steps,
        "micro_batch_size": micro_batch,
        "grad_accum_steps": grad_accum,
        "gradient_checkpointing": "true",
        "output_dir": output_dir,
        "save_every": 0,
        "export": "false",
        "progress_bar": "false",
        "resume": "never",
        "log_every": 1,
    }
    if args.seq_len:
        values["seq_len"] = args.seq_len
    if args.mixed_precision:
        values["mixed_precision"] = args.mixed_precision
    if args.tokenizer:
        values["tokenizer"] = args.tokenizer
    return [f"{k}={v}" for k, v in values.items()]


class TrainingProbe:
    """Watches the model the loop builds (by wrapping the approach's `build`, the loop untouched):
    the lm_head's output dtype is the compute dtype autocast gives, and a decoder layer's call
    count shows whether the backward pass recomputed it. It also prints when the model is built and
    each forward pass ends, so a run stopped at its time cap shows how far it got."""

    def __init__(self, approach, report=print):
        self.approach = approach
        self.report = report
        self.started = time.perf_counter()
        self.forwards = 0
        self.model = None
        self.compute_dtype = None
        self.layer_calls = 0
        self.hooks = []

    def __enter__(self):
        build = type(self.approach).build

        def watched_build(recipe):
            trainable = build(self.approach, recipe)
            self.report(f"model built at {time.perf_counter() - self.started:.1f} s")
            self.watch(trainable.model)
            return trainable

        self.approach.build = watched_build
        return self

    def __exit__(self, *exc):
        del self.approach.build
        for hook in self.hooks:
            hook.remove()

    def head_ran(self, _module, _inputs, out) -> None:
        """The lm_head runs once per micro-batch (checkpointing recomputes layers, not the head)."""
        self.compute_dtype = out.dtype
        self.forwards += 1
        self.report(f"forward {self.forwards} done at {time.perf_counter() - self.started:.1f} s")

    def watch(self, model) -> None:
        from transformers.modeling_layers import GradientCheckpointingLayer

        self.model = model
        head = model.get_output_embeddings()
        self.hooks.append(head.register_forward_hook(self.head_ran))
        layer = next((m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)), None)
        # The layer's first part, not the layer: transformers checkpoints `forward`, so the layer's own
        # hooks run once; a pre-hook, since the recomputation may stop before a forward hook would run.
        part = next(layer.children(), None) if layer is not None else None
        if part is not None:
            self.hooks.append(
                part.register_forward_pre_hook(lambda *_: setattr(self, "layer_calls", self.layer_calls + 1))
            )


def parameter_count(recipe, base_config) -> int:
    """Parameters of the shape, built on the meta device (no memory, no time)."""
    import torch
    from transformers import AutoModelForCausalLM

    from lm_eval_longmem_training.approaches import get_approach

    with torch.device("meta"):
        if base_config is None:
            model = get_approach(recipe.approach).build(recipe).model
        else:
            model = AutoModelForCausalLM.from_config(base_config)
    return sum(p.numel() for p in model.parameters())


def fit_note(params: int, capacity: int) -> str:
    """Why a full fine-tune of `params` parameters cannot fit in `capacity` bytes, or "" when it
    might (a lower bound: weights, gradients and AdamW states, no activations)."""
    static = params * BYTES_PER_TRAINED_PARAM
    if static <= capacity:
        return ""
    return (
        f"does not fit: {params / 1e9:.2f}B params x {BYTES_PER_TRAINED_PARAM} B (fp32 weights, grads, "
        f"AdamW m+v) = {static / GIB:.0f} GiB > {capacity / GIB:.0f} GiB before activations"
    )


def base_config_for(recipe, edits_for):
    """The config of the model a fine-tuning recipe starts from, with the benchmark's edits; None
    for `from_scratch`, which the approach builds from `model_config`."""
    from transformers import AutoConfig

    from lm_eval_longmem_training.approaches.base import base_model_source

    if recipe.approach == "from_scratch":
        return None
    if recipe.model in HUB_SHAPES:
        fields = dict(HUB_SHAPES[recipe.model])
        model_type = fields.pop("model_type")
        return AutoConfig.for_model(model_type, **{**fields, **edits_for(fields)})
    source = base_model_source(recipe)
    if not Path(source).is_dir():
        raise RuntimeError(f"no offline shape for {recipe.model!r}: add its config fields to HUB_SHAPES")
    config = AutoConfig.from_pretrained(source)
    for name, value in edits_for(config.to_dict()).items():
        setattr(config, name, value)
    return config


def use_benchmark_tokenizer(config, tokenizer_dir: str):
    """The embedded tokenizer (or the one in `tokenizer_dir`, for a machine without the embedded
    model), with `config`'s vocabulary and special tokens made to match it (a Hub model's own
    tokenizer cannot be downloaded)."""
    from transformers import AutoTokenizer

    from lm_eval_longmem.models.checkpoint.default_model import default_model_dir

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir or default_model_dir())
    config.vocab_size = len(tokenizer)
    for name in ("bos_token_id", "eos_token_id", "pad_token_id"):
        setattr(config, name, getattr(tokenizer, name))
    return tokenizer


def train_and_watch(recipe, device: str, report=print) -> dict:
    """Run the loop on `recipe`; what it measured and what the probe saw."""
    import torch

    from lm_eval_longmem_training.approaches import get_approach
    from lm_eval_longmem_training.loop.optimization import mixed_precision_for
    from lm_eval_longmem_training.loop.progress import read_metrics
    from lm_eval_longmem_training.loop.training_loop import train

    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    with TrainingProbe(get_approach(recipe.approach), report) as probe:
        train(recipe)
    metrics = read_metrics(recipe.output_dir)
    rates = [m["tokens_per_second"] for m in metrics]
    losses = [m["loss"] for m in metrics]
    micro_batches = recipe.max_steps * recipe.grad_accum_steps
    result = {
        "mixed_precision": mixed_precision_for(recipe.mixed_precision),
        "param_dtype": str(next(probe.model.parameters()).dtype).removeprefix("torch."),
        "compute_dtype": str(probe.compute_dtype).removeprefix("torch."),
        "grad_checkpointing": bool(probe.model.is_gradient_checkpointing),
        "layer_calls_per_micro_batch": probe.layer_calls / micro_batches,
        "tokens_per_second": statistics.median(rates[1:] or rates),
        "tokens_per_second_per_step": rates,
        "losses": losses,
        "loss": losses[-1],
        "loss_finite": all(math.isfinite(x) for x in losses),
        "peak_gpu_memory_gib": torch.cuda.max_memory_allocated() / GIB if device == "cuda" else None,
        "device_name": torch.cuda.get_device_name() if device == "cuda" else f"CPU ({torch.get_num_threads()} threads)",
    }
    probe.model = None
    return result


def accumulation_check(args, recipe_name: str, extra: list[str], micro_batch: int, first_losses: list[float]) -> dict:
    """The same global batch as single-sequence micro-batches with accumulation: equal reported losses."""
    from lm_eval_longmem_training.recipes.loading import load_recipe

    with tempfile.TemporaryDirectory() as out:
        recipe = load_recipe(recipe_name, [*recipe_overrides(args, out, 1, micro_batch * args.grad_accum), *extra])
        log(recipe_name, f"accumulation check: micro-batch 1 x {recipe.grad_accum_steps} accumulated")
        losses = train_and_watch(recipe, args.device, lambda m: log(recipe_name, m))["losses"]
    return {
        "grad_accum_1_losses": first_losses,
        f"grad_accum_{recipe.grad_accum_steps}_losses": losses,
        "first_step_ratio": losses[0] / first_losses[0],
    }


def measure(args, recipe_name: str) -> dict:
    """One row: the recipe's shape trained for `--steps` steps (or why it was not)."""
    import torch

    from lm_eval_longmem_training.recipes.loading import load_recipe

    shipped = load_recipe(recipe_name)
    micro_batch = args.micro_batch or (2 if args.tiny else shipped.micro_batch_size)

    def edits_for(fields):
        return architecture_edits(fields, args.tiny, args.layers)

    base_config = base_config_for(shipped, edits_for)
    row = {"recipe": recipe_name, "approach": shipped.approach, "cut_depth": bool(args.layers)}
    with tempfile.TemporaryDirectory() as work:
        out, model_dir = os.path.join(work, "run"), os.path.join(work, "model")
        if base_config is None:
            shape = [f"model_config.{k}={v}" for k, v in edits_for(shipped.model_config).items()]
        else:
            shape = [f"model={model_dir}"]
            tokenizer = use_benchmark_tokenizer(base_config, args.tokenizer)
            if shipped.model in HUB_SHAPES and base_config.vocab_size != HUB_SHAPES[shipped.model]["vocab_size"]:
                row["note"] = (
                    f"vocab {base_config.vocab_size} (embedded tokenizer), "
                    f"not {HUB_SHAPES[shipped.model]['vocab_size']}"
                )
        recipe = load_recipe(recipe_name, [*recipe_overrides(args, out, micro_batch, args.grad_accum), *shape])
        params = parameter_count(recipe, base_config)
        layers = (base_config.to_dict() if base_config is not None else recipe.model_config).get("num_hidden_layers")
        row.update(
            params=params,
            layers=layers,
            seq_len=recipe.seq_len,
            micro_batch=micro_batch,
            grad_accum=recipe.grad_accum_steps,
            steps=recipe.max_steps,
        )
        note = fit_note(params, torch.cuda.get_device_properties(0).total_memory) if args.device == "cuda" else ""
        if note:
            row.update(does_not_fit=True, note="; ".join(n for n in (note, row.get("note")) if n))
            return row
        if base_config is not None:
            log(recipe_name, f"saving a random-weight {base_config.model_type} ({params / 1e6:.1f}M params)")
            save_random_checkpoint(model_dir, base_config, tokenizer)  # bf16 on disk; the loop loads fp32
        log(
            recipe_name,
            f"training {recipe.max_steps} steps: {params / 1e6:.1f}M params, {layers} layers, "
            f"seq_len {recipe.seq_len}, micro-batch {micro_batch} x {recipe.grad_accum_steps}",
        )
        row.update(train_and_watch(recipe, args.device, lambda m: log(recipe_name, m)))
        if args.tiny and args.device == "cpu" and micro_batch * args.grad_accum > 1:
            row["accumulation_check"] = accumulation_check(args, recipe_name, shape, micro_batch, row["losses"])
    return row


def log(recipe: str, message: str) -> None:
    print(f"[{recipe}] {message}", flush=True)


def worker(args) -> None:
    """Child process: measure one recipe and write its row (an error is a row too)."""
    try:
        row = measure(args, args.worker)
    except Exception as err:  # noqa: BLE001  (any failure is this recipe's result, reported in its row)
        traceback.print_exc()
        message = str(err).strip().splitlines()[0] if str(err).strip() else ""
        row = {"recipe": args.worker, "error": f"{type(err).__name__}: {message}"[:400]}
    Path(args.row_json).write_text(json.dumps(row))


def run_worker(args, recipe: str, layers: int = 0) -> dict:
    """One recipe in its own process; a crash or a timeout becomes the row's error."""
    known = {"recipe": recipe, "layers": layers or None, "cut_depth": bool(layers)}
    with tempfile.TemporaryDirectory() as tmp:
        row_json = os.path.join(tmp, "row.json")
        command = [
            sys.executable,
            os.path.abspath(__file__),
            "--worker",
            recipe,
            "--row-json",
            row_json,
            "--device",
            args.device,
            "--steps",
            str(args.steps),
            "--grad-accum",
            str(args.grad_accum),
            "--micro-batch",
            str(args.micro_batch),
            "--layers",
            str(layers),
            "--seq-len",
            str(args.seq_len),
            "--mixed-precision",
            args.mixed_precision,
            "--tokenizer",
            args.tokenizer,
        ]
        if args.tiny:
            command.append("--tiny")
        try:
            env = (
                {**os.environ, "CUDA_VISIBLE_DEVICES": ""} if args.device == "cpu" else None
            )  # accelerate takes a GPU it sees
            code = subprocess.run(command, timeout=args.timeout or None, env=env).returncode
        except subprocess.TimeoutExpired:
            return {**known, "error": f"timed out after {args.timeout} s"}
        if not os.path.exists(row_json):
            return {**known, "error": f"worker exited with code {code} (its output is above)"}
        return {**known, **json.loads(Path(row_json).read_text())}


def table(rows: list[dict]) -> str:
    lines = [
        "| recipe | params | seq_len | dtype (params / compute) | grad ckpt | tokens/s | peak GPU GiB | loss | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        name = r["recipe"] + (f" ({r['layers']} layers)" if r.get("cut_depth") else "")
        if "tokens_per_second" in r:
            ckpt = f"{r['grad_checkpointing']} (layer ran {r['layer_calls_per_micro_batch']:g}x)"
            peak = f"{r['peak_gpu_memory_gib']:.1f}" if r["peak_gpu_memory_gib"] is not None else "-"
            cells = [
                f"{r['params'] / 1e6:,.1f}M",
                str(r["seq_len"]),
                f"{r['param_dtype']} / {r['compute_dtype']}",
                ckpt,
                f"{r['tokens_per_second']:,.0f}",
                peak,
                f"{r['loss']:.4f}",
            ]
        else:
            params = f"{r['params'] / 1e6:,.1f}M" if "params" in r else "-"
            cells = [params, str(r.get("seq_len", "-")), "-", "-", "-", "-", "-"]
        notes = [r.get("error", ""), r.get("note", "")]
        if "accumulation_check" in r:
            notes.append(f"grad-accum first-step loss ratio {r['accumulation_check']['first_step_ratio']:.6f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " | " + "; ".join(n for n in notes if n) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--recipes", nargs="+", default=["fox", "yarn"])
    parser.add_argument("--steps", type=int, default=0, help="optimizer steps (default 3 on CUDA, 2 on the CPU)")
    parser.add_argument(
        "--seq-len", type=int, default=0, help="training length (default: the recipe's; 128 with --tiny)"
    )
    parser.add_argument("--micro-batch", type=int, default=0, help="default: the recipe's (2 with --tiny)")
    parser.add_argument(
        "--grad-accum",
        type=int,
        default=1,
        help="micro-batches per step (default 1: the recipes' 32 only repeat the same micro-step)",
    )
    parser.add_argument(
        "--mixed-precision",
        choices=["", "auto", "no", "bf16", "fp16"],
        default="",
        help="default: the recipe's (auto: bf16 on GPUs that have it, fp32 on the CPU)",
    )
    parser.add_argument(
        "--tiny", action="store_true", help=f"{TINY_LAYERS} blocks x {TINY_WIDTH} at {TINY_SEQ_LEN} tokens"
    )
    parser.add_argument("--layers", type=int, default=0, help="cut every shape to this many layers")
    parser.add_argument(
        "--fallback-layers",
        type=int,
        default=4,
        help="layers to run a shape that does not fit with (0: report it only)",
    )
    parser.add_argument(
        "--tokenizer",
        default="",
        help="a tokenizer folder instead of the embedded model's (scripts/gpu-wheels.sh stages one)",
    )
    parser.add_argument("--timeout", type=int, default=0, help="seconds per recipe (0: none)")
    parser.add_argument("--out-json", default="")
    parser.add_argument("--worker", default="", help=argparse.SUPPRESS)
    parser.add_argument("--row-json", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: CUDA is not available here (use --device cpu, e.g. with --tiny)")
    if args.tokenizer and not Path(args.tokenizer).is_dir():
        parser.error(f"--tokenizer {args.tokenizer}: no such folder (scripts/gpu-wheels.sh stages one)")
    args.steps = args.steps or (3 if args.device == "cuda" else 2)
    if args.tiny and not args.seq_len:
        args.seq_len = TINY_SEQ_LEN
    if args.worker:
        worker(args)
        return

    rows = []
    for recipe in args.recipes:
        log(recipe, "starting")
        rows.append(run_worker(args, recipe, args.layers))
        if rows[-1].get("does_not_fit") and args.fallback_layers:
            log(recipe, f"{rows[-1]['note']}; running it cut to {args.fallback_layers} layers")
            rows.append(run_worker(args, recipe, args.fallback_layers))
        if args.out_json:  # written after every recipe: a later crash keeps the earlier rows
            Path(args.out_json).write_text(
                json.dumps({"device": args.device, "tiny": args.tiny, "rows": rows}, indent=1)
            )
    names = sorted({r["device_name"] for r in rows if "device_name" in r})
    print(f"{', '.join(names) or args.device}, {args.steps} steps, gradient checkpointing on:", flush=True)
    print(table(rows), flush=True)


if __name__ == "__main__":
    main()
