"""RoPE extensions on SmolLM2-135M (native length 8192) at 1.5-2x its length: passkey
retrieval accuracy and forward cost, each method against vanilla measured in the same run.

Accuracy runs the real `longmem_passkey` task through `lm_eval.simple_evaluate` and
`--model longmem` (landmark-attention prompt sized in the model's tokens, greedy, correct iff
the first integer generated is the key). Vanilla beyond 8192 runs with `max_length` raised
explicitly (the model itself has no hard limit; the wrapper refuses without it): that is the
collapse the extensions are meant to avoid. A vanilla control inside the native length shows
the task is within the model's reach.

Forward cost: one prefill forward (logits of the last position only) at the same length,
repetitions alternated between vanilla and the method, medians. `--device cuda` with
`--random-shape` times a randomly initialised model of a real architecture's shape (no
weights are downloaded; speed does not depend on the weights), e.g. Llama-3.1-8B's at 32k.

    nice -n 5 python benchmarks/rope_extension.py                       # 12288 tokens, 3 depths
    nice -n 5 python benchmarks/rope_extension.py --length 16384 --depths 50 --timing-reps 3
    python benchmarks/rope_extension.py --skip-accuracy --device cuda --random-shape llama-3.1-8b \
        --timing-length 32768 --timing-reps 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

ACCURACY_METHODS = {
    "vanilla": {},
    "ntk": {"factor": 2.0},
    "dynamic_ntk": {"s": 2.0, "factor": 2.0},
    "yarn": {"factor": 2.0},
    "self_extend": {"window": 2048, "group": 32},
}
TIMING_METHODS = {
    "pi": {"factor": 2.0},
    "ntk": {"factor": 2.0},
    "dynamic_ntk": {"s": 2.0, "factor": 2.0},
    "yarn": {"factor": 2.0},
    "self_extend": {"window": 2048, "group": 32},
    "lm_infinite": {"factor": 2.0},
}
# Architecture shapes for timing with random weights (native length 8192, as SmolLM2 / Llama-3).
RANDOM_SHAPES = {
    "smollm2-135m": dict(
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        vocab_size=49152,
        rope_theta=100000.0,
    ),
    "llama-3.2-1b": dict(
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=128256,
        rope_theta=500000.0,
    ),
    "llama-3.1-8b": dict(
        hidden_size=4096,
        intermediate_size=14336,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=128256,
        rope_theta=500000.0,
    ),
}
NATIVE_LENGTH = 8192


def passkey_accuracy(
    method: str, method_args: dict, length: int, depths: list[int], samples: int, max_length: int | None
):
    """(overall accuracy, per-depth accuracies) of `longmem_passkey` at one length, through lm-eval."""
    import lm_eval

    import lm_eval_longmem

    lm_eval_longmem.register()
    model_args = {"method": method, "device": "cpu", **method_args}
    if max_length is not None:
        model_args["max_length"] = max_length
    results = lm_eval.simple_evaluate(
        model="longmem",
        model_args=model_args,
        tasks=["longmem_passkey"],
        metadata={"pk_lengths": [length], "pk_depths": depths, "pk_samples": samples},
    )
    metrics = results["results"]["longmem_passkey"]
    per_depth = {d: metrics[f"acc@depth{d:03d},none"] for d in depths}
    return metrics["acc,none"], per_depth


def load(method: str, args: dict, device: str, dtype, random_shape: str | None, attn_implementation: str = "sdpa"):
    """The model as `--model longmem` builds it: config edited by the method, then patched."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig

    from lm_eval_longmem.models.checkpoint.default_model import default_model_dir
    from lm_eval_longmem.models.method_registry import build_method

    chosen = build_method(method, args)
    if random_shape:
        config = LlamaConfig(
            max_position_embeddings=NATIVE_LENGTH, tie_word_embeddings=False, **RANDOM_SHAPES[random_shape]
        )
        config._attn_implementation = attn_implementation
        chosen.prepare_config(config)
        with torch.device(device):  # initialised where it runs: an 8B model never visits the CPU
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn_implementation)
    else:
        source = str(default_model_dir())
        config = AutoConfig.from_pretrained(source)
        chosen.prepare_config(config)
        model = AutoModelForCausalLM.from_pretrained(
            source, config=config, attn_implementation=attn_implementation, dtype=dtype
        )
    return chosen.prepare_model(model.to(device)).eval()


def forward_seconds(model, ids) -> float:
    import torch

    with torch.no_grad():
        if ids.is_cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        model(ids, logits_to_keep=1, use_cache=False)
        if ids.is_cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--length", type=int, default=12288, help="passkey prompt tokens (1.5x the native 8192)")
    parser.add_argument("--control-length", type=int, default=6144, help="vanilla within its native length")
    parser.add_argument("--depths", type=int, nargs="+", default=[20, 50, 80], help="key depths, percent")
    parser.add_argument("--samples", type=int, default=1, help="keys per depth")
    parser.add_argument("--timing-reps", type=int, default=2)
    parser.add_argument("--timing-length", type=int, default=None, help="default: --length")
    parser.add_argument("--accuracy-methods", nargs="+", default=list(ACCURACY_METHODS), choices=list(ACCURACY_METHODS))
    parser.add_argument("--timing-methods", nargs="+", default=list(TIMING_METHODS), choices=list(TIMING_METHODS))
    parser.add_argument("--attn-implementation", default="sdpa", choices=["sdpa", "eager"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default=None, help="default: float32 on the CPU, bfloat16 on CUDA")
    parser.add_argument(
        "--random-shape",
        choices=list(RANDOM_SHAPES),
        default=None,
        help="time a random-weight model of this shape instead of SmolLM2 (timing only)",
    )
    parser.add_argument("--skip-control", action="store_true", help="skip vanilla within its native length")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--skip-timing", action="store_true")
    args = parser.parse_args()

    import torch
    from tqdm import tqdm

    dtype = getattr(torch, args.dtype or ("bfloat16" if args.device.startswith("cuda") else "float32"))
    if not args.skip_accuracy and not args.random_shape:
        print(f"passkey at {args.length} tokens, depths {args.depths}%, {args.samples} key(s) each:", flush=True)
        rows = []
        if not args.skip_control:
            rows.append(
                (
                    "vanilla (control)",
                    args.control_length,
                    passkey_accuracy("vanilla", {}, args.control_length, args.depths, args.samples, None),
                )
            )
        for method in args.accuracy_methods:
            method_args = ACCURACY_METHODS[method]
            max_length = args.length + 16 if method == "vanilla" else None
            rows.append(
                (
                    f"{method} {method_args or ''}".strip(),
                    args.length,
                    passkey_accuracy(method, method_args, args.length, args.depths, args.samples, max_length),
                )
            )
        for name, length, (acc, per_depth) in rows:
            depths = "  ".join(f"{d}%: {a:.2f}" for d, a in per_depth.items())
            print(f"  {name:40s} @ {length:6d}: accuracy {acc:.2f}   ({depths})", flush=True)
    if not args.skip_timing:
        length = args.timing_length or args.length
        vocab = RANDOM_SHAPES[args.random_shape]["vocab_size"] if args.random_shape else 49152
        ids = torch.randint(100, vocab, (1, length), generator=torch.Generator().manual_seed(0)).to(args.device)
        vanilla = load("vanilla", {}, args.device, dtype, args.random_shape, args.attn_implementation)
        forward_seconds(vanilla, ids[:, :512])
        shape = args.random_shape or "SmolLM2-135M"
        print(
            f"forward cost of {shape} ({dtype}, {args.attn_implementation}, {args.device}) at {length} tokens "
            f"(median of {args.timing_reps}, alternated with vanilla):",
            flush=True,
        )
        for method in args.timing_methods:
            method_args = TIMING_METHODS[method]
            model = load(method, method_args, args.device, dtype, args.random_shape, args.attn_implementation)
            forward_seconds(model, ids[:, :512])
            base, ours = [], []
            for _ in tqdm(range(args.timing_reps), desc=method):
                base.append(forward_seconds(vanilla, ids))
                ours.append(forward_seconds(model, ids))
            b, o = statistics.median(base), statistics.median(ours)
            print(f"  {method:12s} {o:8.3f} s  vanilla {b:8.3f} s  ratio {o / b:5.2f}x", flush=True)
            del model
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
