"""LongCache's recall for one layer of a row: the Triton top-keys kernel (GPU) and the C scan (CPU)
against the PyTorch path.

What the layer-major scorer does per layer (`models/bounded_cache/chunk_recall.RecalledSpans`): every
recalling chunk's queries score the middle before that chunk, each query head keeps its `top_k` best
keys, the picks are counted and the `top_k_prime` most picked become spans. With `backend="triton"`
the scoring and ranking is one kernel launch for every chunk (`kernels/top_keys`); with
`backend="scan"` (the CPU's default) ATen's q.k fills cache-sized tiles that a C function ranks into
each query's running best keys; with `backend="torch"` the chunks go in groups whose float32 scores
fit a budget (256 MiB on a GPU, a cache-sized tile on the CPU), written out and ranked by `topk`. All
must recall the same slots.

Printed per T: seconds of one layer's recall (median of `--repeats` after a warm-up), each fast
path's time as a ratio to the PyTorch path's, ops dispatched through torch (a Triton launch or a C
call is not a torch op: the kernel path adds one launch to its count), peak memory above the
inputs, and whether the recalled slots are the same.

The kernel needs CUDA; on a CPU it runs only under TRITON_INTERPRET=1 (the interpreter: for the
tiny smoke run). The scan runs on the CPU where a C compiler builds it.

    python benchmarks/recall_top_keys.py --device cuda                  # the 1B benchmark's layer, 4k and 16k
    python benchmarks/recall_top_keys.py --device cpu --heads 4 --kv-heads 2 --dtype float32   # scan vs torch
    TRITON_INTERPRET=1 python benchmarks/recall_top_keys.py --tiny      # seconds, on the CPU
"""

from __future__ import annotations

import argparse
import os

import torch
from one_call_timing import rows_by_length, time_and_count  # benchmarks/ is on sys.path as a script

from lm_eval_longmem.kernels.top_keys import scan_top_keys
from lm_eval_longmem.models.bounded_cache.chunk_recall import RecalledSpans
from lm_eval_longmem.models.bounded_cache.chunk_windows import ChunkWindows, WindowShape
from lm_eval_longmem.models.methods.longcache import LongCacheArgs


def kernel_runs_here(device: str) -> bool:
    interpreted = os.environ.get("TRITON_INTERPRET", "").lower() in ("1", "true", "on", "yes")
    return device.startswith("cuda") or interpreted


def fast_paths(device: str) -> tuple[str, ...]:
    """The paths timed against the PyTorch path on `device`."""
    scan = ("scan",) if device == "cpu" and scan_top_keys.available() else ()
    return (("triton",) if kernel_runs_here(device) else ()) + scan


def time_recall(recall: RecalledSpans, queries, keys, windows, repeats: int, device: str) -> dict:
    timed = time_and_count(lambda: recall(queries, keys, windows), repeats, device)
    timed["slots"] = timed.pop("result")
    return timed


def measure(args, length: int) -> dict:
    device = args.device
    settings = LongCacheArgs(
        max_context_length=args.budget, chunk_size=args.chunk, sink_length=args.sinks, span_size=args.span
    )
    shape = WindowShape(
        settings.sink_length, settings.local_window, settings.chunk_size, slots=settings.recalled_tokens
    )
    dtype = getattr(torch, args.dtype)
    generator = torch.Generator(device=device).manual_seed(length)
    queries = torch.randn(args.heads, length, args.head_dim, device=device, generator=generator).to(dtype)
    keys = torch.randn(args.kv_heads, length, args.head_dim, device=device, generator=generator).to(dtype)
    windows = ChunkWindows(shape, length, torch.device(device), dtype)
    paths = ("torch", *fast_paths(device))
    row = {"T": length, "recalling_chunks": sum(s > args.budget for s in windows.host_starts)}
    for backend in paths:
        recall = RecalledSpans(
            settings.max_context_length, settings.top_k, settings.top_k_prime, settings.span_size, backend
        )
        row[backend] = time_recall(recall, queries, keys, windows, args.repeats, device)
    torch_path = row["torch"]
    for backend in paths[1:]:
        fast = row[backend]
        fast["time_ratio"] = fast["seconds"] / torch_path["seconds"]
        same = fast["slots"] is None and torch_path["slots"] is None
        if fast["slots"] is not None and torch_path["slots"] is not None:
            same = all(torch.equal(a, b) for a, b in zip(fast["slots"], torch_path["slots"]))
        fast["same_slots"] = same
    for backend in paths:
        row[backend].pop("slots")
    return row


def print_row(row: dict) -> None:
    for backend in ("torch", "triton", "scan"):
        if backend in row:
            r = row[backend]
            launch = {"triton": " + 1 kernel launch", "scan": " + C calls"}.get(backend, "")
            print(
                f"  T={row['T']:>6} {backend:>6}: {r['seconds'] * 1e3:9.2f} ms, {r['ops']:,} ops{launch}, "
                f"{r['host_reads']} host reads, peak {r['peak_bytes'] / 2**20:.1f} MiB",
                flush=True,
            )
    for backend in ("triton", "scan"):
        if backend in row:
            r = row[backend]
            print(
                f"  T={row['T']:>6} {backend} / torch: {r['time_ratio']:.3f}x the time, same slots: {r['same_slots']}",
                flush=True,
            )
    if "triton" not in row:
        print(f"  T={row['T']:>6} the kernel needs CUDA (or TRITON_INTERPRET=1)", flush=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument(
        "--dtype",
        default="bfloat16",
        choices=["bfloat16", "float16", "float32"],
        help="the queries' and keys' dtype (the recall scores in float32)",
    )
    parser.add_argument("--tiny", action="store_true", help="2 heads, D 16, budget 16, chunk 8, T 64: a smoke run")
    parser.add_argument("--lengths", type=int, nargs="+", default=None, help="T (default 4096 16384; tiny: 64)")
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--budget", type=int, default=2048, help="max_context_length (the 1B benchmark's C/2)")
    parser.add_argument("--chunk", type=int, default=512)
    parser.add_argument("--sinks", type=int, default=32)
    parser.add_argument("--span", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out-json", default="")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(
            f"--device {args.device}: this machine has no CUDA GPU "
            "(use --device cpu: the C scan against the PyTorch path)"
        )
    if args.tiny:
        args.heads, args.kv_heads, args.head_dim = 2, 1, 16
        args.budget, args.chunk, args.sinks, args.span, args.repeats = 16, 8, 2, 2, 1
    args.lengths = args.lengths or ([64] if args.tiny else [4096, 16384])
    return args


def main(argv=None) -> list[dict]:
    args = parse_args(argv)
    print(
        f"LongCache recall, one layer: {args.heads}/{args.kv_heads} heads, D {args.head_dim}, budget {args.budget}, "
        f"chunk {args.chunk}, {args.sinks} sinks, spans of {args.span}, {args.dtype} on {args.device}",
        flush=True,
    )
    return rows_by_length(args, measure, print_row)


if __name__ == "__main__":
    main()
