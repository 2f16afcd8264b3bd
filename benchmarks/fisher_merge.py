"""Stated-CLM's merge of one steady chunk (every layer's keys and values at once, as the static step
merges them): the CPU's C function against the ATen path, its reference and what a GPU runs.

The cache is random, shaped as the step's: `--layers` layers of `--kv-heads` heads of `--budget`
entries of `--head-dim`, gradients with a few zero entries, and `--chunk` adjacent pairs chosen per
layer from random pair scores outside `--sinks` sinks (so runs of every length occur, as eq. 19's
choice makes them). Printed per shape: milliseconds of one merge (median of `--repeats` after a
warm-up), the C function's time as a ratio to the ATen path's, and the largest difference between
their outputs. The defaults are `method_scoring.py`'s CPU model; `--layers 16 --kv-heads 8` is the
1B Llama's.

    python benchmarks/fisher_merge.py                    # 8 layers, 2 heads, budget 2,048, chunk 512
    python benchmarks/fisher_merge.py --layers 16 --kv-heads 8
    python benchmarks/fisher_merge.py --tiny             # seconds
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from lm_eval_longmem.models.bounded_cache import fisher_average_cpu, merging


def stacked_cache(args) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(keys and values [2, L, Hkv, M, d], their gradients, the merge groups [L, M])."""
    generator = torch.Generator().manual_seed(0)
    shape = (2, args.layers, args.kv_heads, args.budget, args.head_dim)
    x = torch.randn(shape, generator=generator)
    grad = torch.randn(shape, generator=generator) * 1e-3
    grad[..., :: args.budget // 8 + 1, :] = 0.0  # a few entries without information
    scores = merging.pair_scores(torch.rand(args.layers, args.budget, generator=generator), args.sinks, 10.0)
    groups = merging.merge_groups(merging.select_pairs(scores, args.chunk, args.sinks))
    return x, grad, groups


def time_merge(merge, repeats: int) -> tuple[float, torch.Tensor]:
    out = merge()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        merge()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), out


def measure(args) -> dict:
    x, grad, groups = stacked_cache(args)
    kept = args.budget - args.chunk
    row = {"layers": args.layers, "kv_heads": args.kv_heads, "budget": args.budget, "chunk": args.chunk}
    original = fisher_average_cpu.takes
    try:
        fisher_average_cpu.takes = lambda x, grad: False
        row["aten_seconds"], reference = time_merge(lambda: merging.fisher_average(x, grad, groups, kept), args.repeats)
    finally:
        fisher_average_cpu.takes = original
    if fisher_average_cpu.LIBRARY.available():
        row["c_seconds"], out = time_merge(
            lambda: fisher_average_cpu.cpu_fisher_average(x, grad, groups, kept), args.repeats
        )
        row["time_ratio"] = row["c_seconds"] / row["aten_seconds"]
        row["largest_difference"] = float((out - reference).abs().max())
    else:
        row["c_unavailable"] = fisher_average_cpu.LIBRARY.unavailable_reason()
    return row


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--budget", type=int, default=2048, help="max_context_length: entries before the merge")
    parser.add_argument("--chunk", type=int, default=512, help="pairs merged (a chunk's entries)")
    parser.add_argument("--sinks", type=int, default=32)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="2 layers, 1 head, budget 64, chunk 16, D 8")
    parser.add_argument("--out-json", default="")
    args = parser.parse_args(argv)
    if args.tiny:
        args.layers, args.kv_heads, args.budget, args.chunk, args.sinks, args.head_dim = 2, 1, 64, 16, 4, 8
        args.repeats = 1
    if args.chunk > args.budget - 1 - args.sinks:
        parser.error(f"--chunk {args.chunk}: only {args.budget - 1 - args.sinks} pairs lie outside the sinks")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    print(
        f"stated-CLM merge of one chunk: {args.layers} layers, {args.kv_heads} heads, {args.budget} entries of "
        f"{args.head_dim}, {args.chunk} pairs, float32, {torch.get_num_threads()} threads",
        flush=True,
    )
    row = measure(args)
    print(f"  ATen: {row['aten_seconds'] * 1e3:.2f} ms", flush=True)
    if "c_seconds" in row:
        print(
            f"  C:    {row['c_seconds'] * 1e3:.2f} ms, {row['time_ratio']:.3f}x the ATen time, "
            f"largest difference {row['largest_difference']:.2e}",
            flush=True,
        )
    else:
        print(f"  C:    not available ({row['c_unavailable']})", flush=True)
    if args.out_json:
        with open(args.out_json, "w") as out:
            json.dump({"settings": vars(args), "row": row}, out, indent=1)
    return row


if __name__ == "__main__":
    main()
