"""CLEX against PI and YaRN fine-tuned with the same budget, past the fine-tuning length, at CPU scale.

The controlled study finds CLEX (with NTK) still working beyond the length it was fine-tuned to,
where PI and YaRN fine-tuned to the same length degrade. Its setting is LLaMA-2-7B fine-tuned at
32k; this runs the same comparison on a tiny Llama (the recipe of yarn_finetune_claim.py):

1. pretrain a 2-layer Llama at context C on the embedded Shakespeare (the last four plays held out);
2. fine-tune it three ways with the same steps, sequences of 2C tokens, lr and data, through the
   shipped recipes: `tiny-pi` (factor 2), `tiny-yarn` (factor 2) and `tiny-clex` (max_factor 8,
   C as original_length: CLEX samples positions over [0, C t') with t' up to 8, so it trains its ODE
   for lengths it never reads whole);
3. score the real `longmem_perplexity` task on the held-out plays at C, 2C, 4C and 8C (PI and YaRN
   with max_length 8C, i.e. their fine-tuned scaling read past 2C; CLEX picks t = ceil(L/C)).

Reported: perplexity per length, and CLEX's perplexity over PI's and YaRN's at each length with a
95% interval from a paired bootstrap over the windows (the same windows for every model).

    nice -n 5 python benchmarks/clex_extrapolation_claim.py
"""

from __future__ import annotations

import argparse
import math
import os
import random
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from yarn_finetune_claim import (  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
    add_base_arguments,
    pretrain_base,
    run_recipe,
)

FINE_TUNE_FACTOR = 2
CLEX_MAX_FACTOR = 8


def window_nll(model_args: dict, metadata: dict) -> dict[int, dict[int, tuple[float, int]]]:
    """{L: {window: (summed NLL, tokens)}} of one `longmem_perplexity` run (one model load)."""
    import lm_eval

    import lm_eval_longmem

    lm_eval_longmem.register()
    out = lm_eval.simple_evaluate(
        model="longmem",
        model_args={"device": "cpu", **model_args},
        tasks=["longmem_perplexity"],
        metadata=metadata,
        log_samples=True,
    )
    by_length: dict[int, dict[int, tuple[float, int]]] = {}
    for sample in out["samples"]["longmem_perplexity"]:
        record = sample["ppl_curve"]
        if record.get("status") == "ok":
            by_length.setdefault(int(record["length"]), {})[sample["doc_id"]] = (record["nll_sum"], record["tokens"])
    return by_length


def perplexity(windows: dict[int, tuple[float, int]], ids=None) -> float:
    ids = list(windows) if ids is None else ids
    return math.exp(sum(windows[i][0] for i in ids) / sum(windows[i][1] for i in ids))


def ratio_interval(a: dict, b: dict, draws: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """perplexity(a) / perplexity(b) over their shared windows, and its 95% paired-bootstrap interval."""
    shared = sorted(set(a) & set(b))
    rng = random.Random(seed)
    ratios = []
    for _ in range(draws):
        picked = [rng.choice(shared) for _ in shared]
        ratios.append(perplexity(a, picked) / perplexity(b, picked))
    ratios.sort()
    return perplexity(a, shared) / perplexity(b, shared), ratios[int(0.025 * draws)], ratios[int(0.975 * draws) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_base_arguments(parser)
    parser.add_argument("--ppl-windows", type=int, default=16)
    args = parser.parse_args()
    c = args.context
    lengths = [c, FINE_TUNE_FACTOR * c, 4 * c, CLEX_MAX_FACTOR * c]
    started = time.perf_counter()

    work, base, _ = pretrain_base(args, "clex_extrapolation_claim_")
    same_budget = [
        f"model={base}",
        f"data={work / 'train'}",
        f"seq_len={FINE_TUNE_FACTOR * c}",
        f"max_steps={args.finetune_steps}",
        "micro_batch_size=2",
        f"lr={args.finetune_lr}",
        "warmup_steps=5",
    ]
    method_overrides = {
        "pi": ("tiny-pi", [f"method_args.factor={FINE_TUNE_FACTOR}"]),
        "yarn": ("tiny-yarn", [f"method_args.factor={FINE_TUNE_FACTOR}"]),
        "clex": (
            "tiny-clex",
            [
                f"method_args.max_factor={CLEX_MAX_FACTOR}",
                f"method_args.original_length={c}",
                "method_args.time_dt=0.01",
            ],
        ),
    }
    exports = {
        name: run_recipe(recipe, same_budget + extra + [f"output_dir={work / name}"])["export"]
        for name, (recipe, extra) in method_overrides.items()
    }
    held_out = str(work / "held_out")
    metadata = {"ppl_lengths": lengths, "ppl_windows": args.ppl_windows, "ppl_corpus": held_out}
    longest = max(lengths)
    settings = {
        "base (vanilla)": {"pretrained": base, "method": "vanilla", "max_length": longest},
        "pi fine-tuned": {"pretrained": exports["pi"], "max_length": longest},
        "yarn fine-tuned": {"pretrained": exports["yarn"], "max_length": longest},
        "clex fine-tuned": {"pretrained": exports["clex"]},
    }
    measured = {name: window_nll(model_args, metadata) for name, model_args in settings.items()}
    names = list(settings)

    print(
        f"\npretrained at C={c}; fine-tuned {args.finetune_steps} steps at {FINE_TUNE_FACTOR * c} tokens "
        f"(PI, YaRN factor {FINE_TUNE_FACTOR}; CLEX max_factor {CLEX_MAX_FACTOR}); "
        f"{args.ppl_windows} held-out windows per length"
    )
    print(f"\n{'tokens':>6} " + " ".join(f"{n:>16}" for n in names))
    for length in lengths:
        cells = " ".join(
            f"{perplexity(measured[n][length]):16.2f}" if measured[n].get(length) else f"{'-':>16}" for n in names
        )
        marker = "  past the fine-tuning length" if length > FINE_TUNE_FACTOR * c else ""
        print(f"{length:>6} {cells}{marker}")
    verdicts = []
    print("\nCLEX perplexity / the other's, 95% paired-bootstrap interval over windows:")
    for length in lengths:
        for other in ("pi fine-tuned", "yarn fine-tuned"):
            ratio, low, high = ratio_interval(measured["clex fine-tuned"][length], measured[other][length])
            print(f"  {length:>5} tokens vs {other:<16} {ratio:.3f} [{low:.3f}, {high:.3f}]")
            if length > FINE_TUNE_FACTOR * c:
                verdicts.append(high < 1.0)
    claim = "SUPPORTED" if all(verdicts) else ("PARTLY supported" if any(verdicts) else "NOT supported")
    print(
        f"\nverdict: CLEX lower than both PI and YaRN past the fine-tuning length, interval below 1: {claim} "
        f"({sum(verdicts)} of {len(verdicts)} comparisons) at this scale"
    )
    print(f"total time {time.perf_counter() - started:.0f} s; runs in {work}")


if __name__ == "__main__":
    main()
