"""Perplexity scoring: `longmem_perplexity`'s path vs the naive full-logits paths.

One window of L tokens from the offline corpus, every token but the first scored (what the
task asks for), on the embedded default model (SmolLM2-135M, vocabulary 49152), three ways:

* ours:  `LongMemLM.loglikelihood` on the task's own request (body once, output head over a
         bounded block of positions at a time, per-token losses kept);
* hflm:  lm-eval's HFLM on the same request (full-vocabulary log-softmax over every position);
* torch: `model(ids, labels=ids)`, the usual perplexity script (full logits, then cross-entropy).

Each measurement runs in a fresh process; the RSS high-water mark is reset after the model is
loaded and warmed up, so "peak" is what scoring adds. Time is the best of --repeats runs.
Printed as ratios ours/naive (below 1: ours is cheaper), with the perplexities for a check.

    python benchmarks/perplexity_scoring.py                 # L = 1024 2048 4096
    python benchmarks/perplexity_scoring.py --lengths 8192 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

from process_memory import reset_peak, run_worker, status_kib  # benchmarks/ is on sys.path when run as a script

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
IMPLS = ("ours", "hflm", "torch")


def _window(tokenizer, length: int) -> list[int]:
    import numpy as np

    from lm_eval_longmem.data.corpora import load_corpus
    from lm_eval_longmem.data.token_stream import corpus_documents
    from lm_eval_longmem.tasks.perplexity.protocol import book_windows

    documents = corpus_documents(load_corpus("shakespeare"), tokenizer)
    ((doc, start),) = book_windows(documents, length, 1, np.random.default_rng(length))
    return documents[doc][start : start + length].tolist()


def worker(impl: str, length: int, repeats: int) -> dict:
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    from lm_eval.models.huggingface import HFLM

    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM
    from lm_eval_longmem.models.checkpoint.default_model import default_model_dir

    path = str(default_model_dir())
    lm = (LongMemLM if impl == "ours" else HFLM)(pretrained=path, device="cpu", max_length=max(length, 8192))

    def score(ids: list[int]) -> float:
        """Summed NLL of ids[1:] given what precedes each."""
        if impl == "torch":
            with torch.no_grad():
                out = lm.model(torch.tensor([ids]), labels=torch.tensor([ids]))
            return float(out.loss) * (len(ids) - 1)
        (result,) = lm._loglikelihood_tokens([(None, ids[:1], ids[1:])], disable_tqdm=True)
        return -result[0]

    ids = _window(lm.tokenizer, length)
    score(ids[:16])  # warm-up
    reset_peak()
    baseline = status_kib("VmRSS")
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        nll = score(ids)
        times.append(time.perf_counter() - t0)
    return {
        "impl": impl,
        "seconds": min(times),
        "peak_mib": (status_kib("VmHWM") - baseline) / 1024,
        "ppl": math.exp(nll / (length - 1)),
    }


def measure(impl: str, length: int, repeats: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", impl, "--lengths", str(length), "--repeats", str(repeats)]
    return run_worker(cmd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--worker", choices=IMPLS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.lengths[0], args.repeats)))
        return

    print("perplexity scoring on SmolLM2-135M (CPU): longmem_perplexity's path vs full logits (ratios ours/naive)")
    print(
        f"{'L':>6} | {'ours s':>7} {'hflm s':>7} {'torch s':>7} {'t/hflm':>7} {'t/torch':>7} | "
        f"{'ours MiB':>8} {'hflm MiB':>8} {'torch MiB':>9} {'m/hflm':>7} {'m/torch':>7} | "
        f"{'ppl ours':>9} {'hflm':>9} {'torch':>9}"
    )
    for length in args.lengths:
        r = {impl: measure(impl, length, args.repeats) for impl in IMPLS}
        o, h, t = r["ours"], r["hflm"], r["torch"]
        print(
            f"{length:>6} | {o['seconds']:>7.2f} {h['seconds']:>7.2f} {t['seconds']:>7.2f} "
            f"{o['seconds'] / h['seconds']:>6.2f}x {o['seconds'] / t['seconds']:>6.2f}x | "
            f"{o['peak_mib']:>8.0f} {h['peak_mib']:>8.0f} {t['peak_mib']:>9.0f} "
            f"{o['peak_mib'] / h['peak_mib']:>6.2f}x {o['peak_mib'] / t['peak_mib']:>6.2f}x | "
            f"{o['ppl']:>9.3f} {h['ppl']:>9.3f} {t['ppl']:>9.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
