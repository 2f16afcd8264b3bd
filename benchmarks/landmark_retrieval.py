"""Landmark Attention's retrieval attention for one layer of a row: the C function (CPU) and the Triton
kernel (GPU) against the PyTorch path.

What the layer-major Landmark scorer does per layer (`kernels/grouped_softmax/retrieval_attention`):
every query reads its window up to itself and the top_k blocks it chose from the blocks of earlier
windows, under one grouped softmax. The inputs here are random, shaped as the scorer makes them:
windows of `--window` tokens, blocks of `--block`, a query of window w choosing among the w *
window / block blocks before it (the first window has none), `--top-k` slots, fewer where fewer
blocks exist. The defaults are `method_scoring.py`'s CPU model (4 query heads on 2 key-value heads,
head size 64) at its Landmark settings (blocks of 64, top_k 5, windows of 128).

Printed per T: milliseconds of one call (median of `--repeats` after a warm-up), each fast path's time
as a ratio to the PyTorch path's, ops dispatched through torch (a C call or a Triton launch is not a
torch op), peak memory above the inputs, and the largest difference from the PyTorch path's output.

    python benchmarks/landmark_retrieval.py --device cpu          # C against PyTorch, 4k and 16k
    python benchmarks/landmark_retrieval.py --device cuda --heads 32 --kv-heads 8 --dtype bfloat16
    python benchmarks/landmark_retrieval.py --tiny                # seconds
"""

from __future__ import annotations

import argparse

import torch
from one_call_timing import rows_by_length, time_and_count  # benchmarks/ is on sys.path as a script

from lm_eval_longmem.kernels.grouped_softmax import retrieval_attention
from lm_eval_longmem.kernels.grouped_softmax.retrieval_attention import _path


def row_inputs(args, length: int) -> dict:
    """Random inputs of one layer's call for a row of `length` tokens (a multiple of the window)."""
    device, dtype = args.device, getattr(torch, args.dtype)
    windows = length // args.window
    per_window = args.window // args.block
    blocks = (windows - 1) * per_window
    generator = torch.Generator(device="cpu").manual_seed(length)

    def rand(*shape):
        return torch.randn(*shape, generator=generator).to(device=device, dtype=dtype)

    visible = (torch.arange(length) // args.window * per_window)[None, :, None]  # blocks before each query
    chosen = (torch.rand(args.heads, length, args.top_k, generator=generator) * visible).long()
    valid = torch.arange(args.top_k)[None, None, :] < visible.clamp(max=args.top_k)
    return dict(
        slot_queries=rand(args.heads, length, args.top_k, args.head_dim),
        window_queries=rand(args.heads, length, args.head_dim),
        window_keys=rand(args.kv_heads, length, args.head_dim),
        window_values=rand(args.kv_heads, length, args.head_dim),
        store_keys=rand(args.kv_heads, blocks, args.block, args.head_dim),
        store_values=rand(args.kv_heads, blocks, args.block, args.head_dim),
        chosen=chosen.to(device),
        slot_valid=valid.expand(args.heads, -1, -1).to(device),
        window=args.window,
        scaling=args.head_dim**-0.5,
    )


def fast_paths(inputs: dict) -> tuple[str, ...]:
    """The paths `auto` would take here besides PyTorch (the C function or the Triton kernel)."""
    tensors = [v for v in inputs.values() if torch.is_tensor(v)]
    with torch.no_grad():
        chosen = _path("auto", tensors)
    return () if chosen == "torch" else (chosen,)


@torch.no_grad()
def time_path(inputs: dict, backend: str, repeats: int, device: str) -> dict:
    timed = time_and_count(lambda: retrieval_attention(**inputs, backend=backend), repeats, device)
    timed["out"] = timed.pop("result")
    return timed


def measure(args, length: int) -> dict:
    inputs = row_inputs(args, length)
    paths = ("torch", *fast_paths(inputs))
    row = {"T": length, "windows": length // args.window}
    for backend in paths:
        row[backend] = time_path(inputs, backend, args.repeats, args.device)
    reference = row["torch"]["out"].float()
    for backend in paths[1:]:
        fast = row[backend]
        fast["time_ratio"] = fast["seconds"] / row["torch"]["seconds"]
        fast["largest_difference"] = float((fast["out"].float() - reference).abs().max())
    for backend in paths:
        row[backend].pop("out")
    return row


def print_row(row: dict) -> None:
    fast = [backend for backend in ("c", "triton") if backend in row]
    for backend in ("torch", *fast):
        r = row[backend]
        extra = {"triton": " + 1 kernel launch", "c": " + 1 C call"}.get(backend, "")
        print(
            f"  T={row['T']:>6} {backend:>6}: {r['seconds'] * 1e3:9.2f} ms, {r['ops']:,} ops{extra}, "
            f"peak {r['peak_bytes'] / 2**20:.1f} MiB",
            flush=True,
        )
    for backend in fast:
        r = row[backend]
        print(
            f"  T={row['T']:>6} {backend} / torch: {r['time_ratio']:.3f}x the time, "
            f"largest difference {r['largest_difference']:.2e}",
            flush=True,
        )
    if not fast:
        print(f"  T={row['T']:>6} no fast path here (CUDA for the kernel; a C compiler and float32 for C)", flush=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="float32", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--tiny", action="store_true", help="2 heads, D 16, blocks of 4, windows of 8, T 64")
    parser.add_argument("--lengths", type=int, nargs="+", default=None, help="T (default 4096 16384; tiny: 64)")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--block", type=int, default=64, help="block_size")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--window", type=int, default=128, help="tokens per window (whole blocks)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out-json", default="")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(f"--device {args.device}: this machine has no CUDA GPU (use --device cpu)")
    if args.tiny:
        args.heads, args.kv_heads, args.head_dim, args.block, args.top_k, args.window = 2, 1, 16, 4, 2, 8
        args.repeats = 1
    args.lengths = args.lengths or ([64] if args.tiny else [4096, 16384])
    bad = [t for t in args.lengths if t % args.window or t < 2 * args.window]
    if args.window % args.block or bad:
        parser.error(
            f"each T must be a multiple of the window ({args.window}) and hold two windows at least, "
            f"and the window whole blocks of {args.block}: got T = {bad or args.lengths}"
        )
    return args


def main(argv=None) -> list[dict]:
    args = parse_args(argv)
    print(
        f"Landmark retrieval attention, one layer: {args.heads}/{args.kv_heads} heads, D {args.head_dim}, blocks "
        f"of {args.block}, top_k {args.top_k}, windows of {args.window}, {args.dtype} on {args.device}, "
        f"{torch.get_num_threads()} threads",
        flush=True,
    )
    return rows_by_length(args, measure, print_row)


if __name__ == "__main__":
    main()
