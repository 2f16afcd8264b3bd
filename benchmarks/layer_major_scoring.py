"""StreamingLLM and LongCache scored layer by layer against the chunk runner, alternated in one process.

`method_scoring.py --chunk-runner` times the two scorers one after the other, which a shared
machine's changing load can turn around; here each repetition times the layer-major scorer (what
`make_scorer` returns) and the chunk runner (`make_chunk_runner_scorer`, the reference) back to back on
the same row, and the ratio is the median of the per-repetition ratios. Also printed: the ops each
call dispatches and its host reads (runtime/dispatch_count.py), and the largest per-token
log-likelihood difference between the two (they compute the same thing).

The model is a random Llama (nothing downloaded); the budget is method_scoring.py's rule for a
model of context C: M = C/2, chunk min(512, M/4), min(32, M/8) sinks, LongCache spans of
min(32, M/16) tokens.

    nice -n 5 python benchmarks/layer_major_scoring.py                       # hidden 256, 2 layers, T = 16384
    python benchmarks/layer_major_scoring.py --tiny                          # seconds: a smoke run
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from lm_eval_longmem.models.method_registry import build_method  # noqa: E402
from lm_eval_longmem.models.runtime.dispatch_count import DispatchCount  # noqa: E402
from lm_eval_longmem.models.runtime.scoring import ScoredSpan  # noqa: E402

METHODS = ("streamingllm", "longcache")


def budget(name: str, context: int) -> dict:
    m = context // 2
    args = {"max_context_length": m, "chunk_size": min(512, m // 4), "sink_length": min(32, m // 8)}
    return {**args, "span_size": max(1, min(32, m // 16))} if name == "longcache" else args


def measure(model, name: str, args, row: torch.Tensor, span: ScoredSpan) -> dict:
    method = build_method(name, budget(name, args.max_position))
    method.prepare_model(model)
    scorers = {
        "layer_major": method.make_scorer(model),
        "chunk_runner": method.make_chunk_runner_scorer(model),
    }
    results, counts, seconds = {}, {}, {key: [] for key in scorers}
    for key, scorer in scorers.items():  # warm-up, and the counts
        results[key] = scorer.score(row, [span])[0]
        with DispatchCount() as count:
            scorer.score(row, [span])
        counts[key] = count
    for _ in range(args.repeats):
        for key, scorer in scorers.items():
            start = time.perf_counter()
            scorer.score(row, [span])
            seconds[key].append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(seconds["layer_major"], seconds["chunk_runner"])]
    gap = abs(results["layer_major"].token_nll - results["chunk_runner"].token_nll).max()
    return {
        "method": name,
        "seconds": {key: statistics.median(value) for key, value in seconds.items()},
        "time_ratio": statistics.median(ratios),
        "ops": {key: count.ops for key, count in counts.items()},
        "host_reads": {key: count.host_reads for key, count in counts.items()},
        "max_nll_gap": float(gap),
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiny", action="store_true", help="hidden 64, 2 layers, C = 128, T = 512")
    parser.add_argument("--length", type=int, help="T (default 16384; tiny 512)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, help="default 256; tiny 64")
    parser.add_argument("--max-position", type=int, help="C (default 4096; tiny 128)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    args = parser.parse_args(argv)
    args.length = args.length or (512 if args.tiny else 16384)
    args.hidden = args.hidden or (64 if args.tiny else 256)
    args.max_position = args.max_position or (128 if args.tiny else 4096)
    return args


def main(argv=None) -> list[dict]:
    args = parse_args(argv)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=256,
        hidden_size=args.hidden,
        intermediate_size=2 * args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=args.max_position,
    )
    model = LlamaForCausalLM(config).eval()
    row = torch.randint(4, 256, (1, args.length), generator=torch.Generator().manual_seed(args.length))
    span = ScoredSpan(args.length - 65, tuple(row[0, args.length - 64 :].tolist()))
    print(f"Llama hidden {args.hidden}, {args.layers} layers, 4/2 heads, C = {args.max_position}, T = {args.length}")
    rows = []
    for name in args.methods:
        found = measure(model, name, args, row, span)
        rows.append(found)
        s, ops, reads = found["seconds"], found["ops"], found["host_reads"]
        print(
            f"{name:>13}: layer-major {s['layer_major']:.3f} s, chunk runner {s['chunk_runner']:.3f} s, "
            f"ratio {found['time_ratio']:.3f} (median of alternated pairs); ops {ops['layer_major']:,} vs "
            f"{ops['chunk_runner']:,}; host reads {reads['layer_major']} vs {reads['chunk_runner']}; "
            f"largest per-token NLL gap {found['max_nll_gap']:.1e}",
            flush=True,
        )
    return rows


if __name__ == "__main__":
    main()
