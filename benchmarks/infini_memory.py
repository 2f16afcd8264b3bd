"""Infini-attention vs full attention: peak memory and decode time at a short and a long input;
with `--cli`, the peak resident memory of whole `lm_eval` runs of the bounded methods against vanilla.

For each input length, each method prefills the input (Infini: segment by segment into its
memory; full attention: one forward filling a KV cache, logits of the last token only) and then
decodes `--decode-tokens` tokens greedily. Reported per (method, length):

* peak memory above the loaded model (resident set high-water mark on the CPU, reset before
  the run through /proc/self/clear_refs; `torch.cuda.max_memory_allocated` on a GPU);
* decode time per token (prefill not timed): the median over the decoded tokens, so that a
  busy machine's stalls do not decide the ratio.

Every measurement runs in a fresh subprocess so that one run's freed-but-cached memory does not
hide the next one's peak. Targets: Infini's peak memory flat within +-5% and its per-token decode
time at the long length <= 1.2x the short one; full attention grows with the input.

The CPU default is a small random Llama (4 layers, hidden 256, 8 query / 2 key-value heads,
SmolLM2's vocabulary) so that full attention at 32k finishes in minutes on 2 cores;
`--model smollm2` uses the embedded SmolLM2-135M instead.

    nice -n 5 python benchmarks/infini_memory.py                              # 4k vs 32k, segment 2048
    nice -n 5 python benchmarks/infini_memory.py --lengths 8192 65536 --model smollm2 --device cuda
    nice -n 5 python benchmarks/infini_memory.py --quick                      # a smoke run

`--cli` measures what a user sees: for each method (`vanilla`, `infini`, `streamingllm`,
`statedclm`, `longcache`) and input length (default 1k, 8k and 32k tokens), one real
`lm_eval --model longmem ... --tasks forgetting_curve` run with one sample at that length (two
requests of 2L + 1 tokens), and the peak resident set of that process (its own high-water mark,
from wait4: other processes on the machine do not change it). It prints the growth of the peak
per 1,000 input tokens between consecutive lengths, as a ratio to vanilla's growth. Everything
the run builds counts: requests, token lists, the plan, the scoring, the results. Run it with
OMP_NUM_THREADS=1 (the children inherit it); the small model gets C = 2048 and the methods sizes
in proportion (segment 1024; budget 1024, chunk 256, 32 sinks), SmolLM2 the methods' defaults.

    OMP_NUM_THREADS=1 nice -n 5 python benchmarks/infini_memory.py --cli      # 1k, 8k, 32k tokens
    OMP_NUM_THREADS=1 python benchmarks/infini_memory.py --cli --quick        # 200 and 800 tokens
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time

from process_memory import reset_peak, run_peak_rss, run_worker, status_kib  # benchmarks/ is on sys.path as a script

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

METHODS = ("infini", "full")
CLI_METHODS = ("vanilla", "infini", "streamingllm", "statedclm", "longcache")
CLI_SMALL_CONTEXT = 2048  # the small model's C under --cli; the methods' sizes follow it


def small_config(max_positions: int):
    """The small random Llama: SmolLM2's vocabulary, 4 layers of hidden 256, 8 query / 2 key-value heads."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=49152,
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
    )


def build_model(name: str, device: str, max_positions: int):
    import torch
    from transformers import AutoModelForCausalLM, LlamaForCausalLM

    if name == "smollm2":
        from lm_eval_longmem.models.checkpoint.default_model import default_model_dir

        model = AutoModelForCausalLM.from_pretrained(default_model_dir(), dtype=torch.float32)
        model.config.max_position_embeddings = max(model.config.max_position_embeddings, max_positions)
    else:
        torch.manual_seed(0)
        model = LlamaForCausalLM(small_config(max_positions))
    return model.to(device).eval()


class PeakMemory:
    """Peak bytes allocated during a `with` block, above what was in use when it started."""

    def __init__(self, device: str):
        self.device = device

    def __enter__(self):
        import torch

        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.start = torch.cuda.memory_allocated()
        else:
            reset_peak()
            self.start = status_kib("VmRSS") * 1024
        return self

    def __exit__(self, *exc):
        import torch

        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
            self.peak = torch.cuda.max_memory_allocated() - self.start
        else:
            self.peak = status_kib("VmHWM") * 1024 - self.start


def infini_session(model, segment_length: int):
    """(prefill(ids) -> next token, step(token) -> next token) through the Infini recurrence."""
    from lm_eval_longmem.models.method_registry import build_method

    method = build_method("infini", {"segment_length": segment_length})
    start_sequence = method.make_scorer(model).start_sequence
    state = {}

    def prefill(ids):
        recurrence = state["recurrence"] = start_sequence()
        for start in range(0, len(ids), segment_length):
            hidden = recurrence.feed(ids[start : start + segment_length])
        return int(recurrence.decoder.logits(hidden[-1]).argmax())

    def step(token):
        recurrence = state["recurrence"]
        return int(recurrence.decoder.logits(recurrence.feed([token])[-1]).argmax())

    return prefill, step


def full_attention_session(model):
    import torch

    from lm_eval_longmem.models.runtime.cache_argument import cache_argument, cache_of

    state = {}

    def prefill(ids):
        out = model(torch.tensor([ids], device=model.device), use_cache=True, logits_to_keep=1)
        state["cache"] = cache_of(out)
        return int(out.logits[0, -1].argmax())

    def step(token):
        out = model(torch.tensor([[token]], device=model.device), **cache_argument(state["cache"]), use_cache=True)
        state["cache"] = cache_of(out)
        return int(out.logits[0, -1].argmax())

    return prefill, step


def measure_one(args) -> dict:
    """One (method, length) measurement, in this process: peak memory and decode ms/token."""
    import torch

    logging.getLogger("lm_eval_longmem").setLevel(logging.ERROR)  # the untrained-gates notice, known here
    torch.manual_seed(0)
    model = build_model(args.model, args.device, max(args.lengths) + args.decode_tokens + 1)
    ids = torch.randint(100, 40000, (args.one_length,), generator=torch.Generator().manual_seed(1)).tolist()
    prefill, step = (
        infini_session(model, args.segment_length) if args.one_method == "infini" else full_attention_session(model)
    )
    with torch.no_grad():
        step(prefill(ids[:64]))  # warm-up: kernels and allocator pools for small shapes
        with PeakMemory(args.device) as peak:
            token = prefill(ids)
            times = []
            for _ in range(args.decode_tokens):
                sync(args.device)
                start = time.perf_counter()
                token = step(token)
                sync(args.device)
                times.append(time.perf_counter() - start)
    return {"peak_bytes": peak.peak, "decode_ms_per_token": 1000 * statistics.median(times)}


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_child(args, method: str, length: int) -> dict:
    command = [
        sys.executable,
        __file__,
        "--one-method",
        method,
        "--one-length",
        str(length),
        "--model",
        args.model,
        "--device",
        args.device,
        "--segment-length",
        str(args.segment_length),
        "--decode-tokens",
        str(args.decode_tokens),
        "--lengths",
        *map(str, args.lengths),
    ]
    # One glibc arena: with one per thread, freed blocks stay resident in other threads' arenas and
    # the RSS peak follows thread scheduling rather than the tensors alive (seen: +50% at random).
    return run_worker(command, env={"MALLOC_ARENA_MAX": "1"})


def cli_model_args(method: str, model: str, pretrained: str | None) -> str:
    """`--model_args` of one method: SmolLM2 with the methods' defaults, the small model with sizes
    in proportion to its C (as on SmolLM2: segment C/2; budget C/2, chunk budget/4, 32 sinks)."""
    args = {"method": method}
    if pretrained:
        args["pretrained"] = pretrained
    if model == "small" and method == "infini":
        args["segment_length"] = CLI_SMALL_CONTEXT // 2
    elif model == "small" and method != "vanilla":
        budget = CLI_SMALL_CONTEXT // 2
        args.update(max_context_length=budget, chunk_size=budget // 4, sink_length=32)
    return ",".join(f"{k}={v}" for k, v in args.items())


def cli_peak(method: str, tokens: int, model: str, pretrained: str | None) -> int:
    """Peak resident bytes of one `lm_eval` forgetting-curve run whose inputs have about `tokens` tokens."""
    half = max(1, tokens // 2)  # the copy input is 2L + 1 tokens
    command = [
        sys.executable,
        "-m",
        "lm_eval",
        "--model",
        "longmem",
        "--model_args",
        cli_model_args(method, model, pretrained),
        "--tasks",
        "forgetting_curve",
        "--metadata",
        f"fc_lengths=[{half}]",
        "fc_samples=1",
        "fc_corpus=shakespeare",
    ]
    peak, _ = run_peak_rss(command)
    return peak


def measure_cli(args) -> dict:
    """Peak RSS of every (method, length) through `lm_eval`, printed with the growth per 1k tokens."""
    import tempfile

    lengths = sorted(args.cli_lengths)
    with tempfile.TemporaryDirectory() as work:
        pretrained = None
        if args.model == "small":
            import torch
            from random_checkpoint import save_random_checkpoint
            from transformers import AutoTokenizer

            from lm_eval_longmem.models.checkpoint.default_model import default_model_dir

            config = small_config(CLI_SMALL_CONTEXT)
            tokenizer = AutoTokenizer.from_pretrained(default_model_dir())  # SmolLM2's: the corpus reads as text
            config.bos_token_id, config.eos_token_id = tokenizer.bos_token_id, tokenizer.eos_token_id
            pretrained = str(save_random_checkpoint(f"{work}/small", config, tokenizer, dtype=torch.float32))
        peaks = {}
        for tokens in lengths:
            for method in args.cli_methods:
                peaks[(method, tokens)] = cli_peak(method, tokens, args.model, pretrained)
                print(f"{method:>13} {tokens:>6} tokens: peak {peaks[(method, tokens)] / 2**20:,.0f} MiB", flush=True)
    print(
        f"\nmodel {args.model} through lm_eval (forgetting_curve, 1 sample), OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}; peak RSS MiB, growth MiB per 1,000 input tokens"
    )
    steps = list(zip(lengths, lengths[1:]))
    growth = {
        (m, a, b): (peaks[(m, b)] - peaks[(m, a)]) / 2**20 / ((b - a) / 1000)
        for m in args.cli_methods
        for a, b in steps
    }
    header = " ".join(f"{n:>8}" for n in lengths) + " " + " ".join(f"{f'{a}->{b}':>13}" for a, b in steps)
    print(f"{'method':>13} {header}  (growth x vanilla's)")
    for m in args.cli_methods:
        cells = " ".join(f"{peaks[(m, n)] / 2**20:>8.0f}" for n in lengths)
        rates = " ".join(f"{growth[(m, a, b)]:>+13.2f}" for a, b in steps)
        ratios = ", ".join(ratio(growth[(m, a, b)], growth.get(("vanilla", a, b))) for a, b in steps)
        print(f"{m:>13} {cells} {rates}  ({ratios})")
    return {
        "peaks_bytes": {f"{m}@{n}": v for (m, n), v in peaks.items()},
        "growth_mib_per_1k": {f"{m}@{a}-{b}": v for (m, a, b), v in growth.items()},
    }


def ratio(value: float, baseline: float | None) -> str:
    """value / baseline, or '-' where the baseline is missing or too small to divide by."""
    if baseline is None or abs(baseline) < 0.01:
        return "-"
    return f"{value / baseline:.2f}x"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["small", "smollm2"], default="small")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--lengths", type=int, nargs=2, default=[4096, 32768], help="short and long input, tokens")
    parser.add_argument("--segment-length", type=int, default=2048)
    parser.add_argument("--decode-tokens", type=int, default=32)
    parser.add_argument(
        "--skip-full", action="store_true", help="Infini only (full attention at the long length is slow)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check the script runs")
    parser.add_argument("--json", help="also write the numbers here")
    parser.add_argument("--cli", action="store_true", help="peak RSS of whole lm_eval runs (see above)")
    parser.add_argument("--cli-lengths", type=int, nargs="+", default=[1000, 8000, 32000], help="input tokens")
    parser.add_argument("--cli-methods", nargs="+", choices=CLI_METHODS, default=list(CLI_METHODS))
    parser.add_argument("--one-method", choices=METHODS, help=argparse.SUPPRESS)
    parser.add_argument("--one-length", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.lengths, args.segment_length, args.decode_tokens = [1024, 4096], 256, 8
        args.cli_lengths = [200, 800]
    if args.cli:
        if "vanilla" not in args.cli_methods:
            args.cli_methods.insert(0, "vanilla")  # the baseline of every ratio
        report = measure_cli(args)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(report, fh, indent=1)
        return
    if args.one_method:
        print(json.dumps(measure_one(args)))
        return
    methods = [m for m in METHODS if not (m == "full" and args.skip_full)]
    short, long = args.lengths
    results = {(m, n): run_child(args, m, n) for m in methods for n in (short, long)}
    print(
        f"model {args.model} on {args.device}, segment_length {args.segment_length}, "
        f"{args.decode_tokens} decoded tokens after each input"
    )
    print(f"{'method':>8} {'input':>7} {'peak MiB':>10} {'decode ms/tok':>14}")
    for (m, n), r in results.items():
        print(f"{m:>8} {n:>7} {r['peak_bytes'] / 2**20:>10.1f} {r['decode_ms_per_token']:>14.2f}")
    print(f"\nratios {long} / {short} tokens (Infini targets: memory 0.95-1.05x, decode <= 1.2x)")
    for m in methods:
        memory = results[(m, long)]["peak_bytes"] / results[(m, short)]["peak_bytes"]
        decode = results[(m, long)]["decode_ms_per_token"] / results[(m, short)]["decode_ms_per_token"]
        print(f"{m:>8}: peak memory {memory:.3f}x, decode time per token {decode:.3f}x")
    if "full" in methods:
        for n in (short, long):
            memory = results[("infini", n)]["peak_bytes"] / results[("full", n)]["peak_bytes"]
            decode = results[("infini", n)]["decode_ms_per_token"] / results[("full", n)]["decode_ms_per_token"]
            print(f"infini / full at {n}: peak memory {memory:.3f}x, decode time per token {decode:.3f}x")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({f"{m}@{n}": r for (m, n), r in results.items()}, fh, indent=1)


if __name__ == "__main__":
    main()
