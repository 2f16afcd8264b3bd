"""Scoring cost of every `longmem` method against `vanilla` on one model (figure P11).

Each method scores ONE loglikelihood request of T tokens in all (a context of random token ids
plus a continuation of `--continuation` tokens, long as the forgetting curve's are) through the
project's real path: `LongMemLM(pretrained=<dir>, method=..., dtype=..., device=...)` and its
`_loglikelihood_tokens`, as lm-eval calls it. Reported per (method, T): tokens/s (T over the
median of `--repeats` timed calls, after one warm-up call at full length, CUDA synchronised
around each), peak memory and the scoring memory above the loaded weights
(`torch.cuda.max_memory_allocated`, reset per measurement; on the CPU the process's resident
high-water mark), each as a ratio to `vanilla` at the same T, and a verdict against a target:
pi / yarn / dynamic_ntk <= 1.05x vanilla's time, self_extend / lm_infinite <= 1.1x, the bounded
caches (streamingllm, statedclm, longcache) <= 2x, infini <= 1.5x, landmark <= 3x (its windows
re-read k retrieved blocks per query token and head), clex <= 1.05x (and its time against yarn's,
printed and kept as `ratio_to_sibling`). The memory ratio compares the
scoring memory (weights are the same for every method and would only dilute it).

The model is a random-weight Llama of about 1B parameters (hidden 2048, 16 layers, 32 query / 8
key-value heads, MLP 8192, vocabulary 32000), built from a config and saved with a small
word-level tokenizer into a temporary directory: nothing is downloaded, and speed does not
depend on the weights. Its max_position_embeddings is 4096, so that at 16k the RoPE extensions
have a factor to apply (4: C' = 16384) and the bounded caches really evict.

Why vanilla gets `max_length=max(--lengths)`: the wrapper refuses an ordinary request longer
than the model's context (4096 here) rather than truncate it, and a RoPE model has no hard limit
beyond that, so with `max_length` raised vanilla runs the very same computation at 16k. Its
scores past 4096 are meaningless, its cost is the baseline every method is compared to. Every
other method runs with only its own arguments, so the test also checks that each accepts T.

Method settings (C = max_position_embeddings): factor 4 for pi, yarn, dynamic_ntk (s = 2) and
lm_infinite (G = 10, local window C), max_factor 4 for clex (its untrained ODE); self_extend
window min(2048, C/2), group 32; the bounded
caches a budget of C/2 entries (docs/methods/bounded-caches.md: 4096 for 8k models), chunk min(512, budget/4),
min(32, budget/8) sinks, LongCache spans of min(32, budget/16) tokens (the default top-k'
fills half the budget); infini segments of min(2048, C/2). All are flags. Landmark runs as the
study set it where C allows (blocks of min(64, C/8), trained length min(512, C), top_k
min(5, T/B - 2): 64, 512, 5 on the 1B model, windows of 128); the random checkpoint's config
names its last token `<landmark>` (the weights are random either way).

FoX against a matched Transformer: a FoX (LLaMA: forget gate, no RoPE, no Pro switches) of the
same hidden size, layers, heads and MLP, scored through `longmem` (method fox, picked by its
config) against a Llama of that shape with one key/value head per query head (FoX has no
grouped-query attention), vanilla; target FoX <= 1.2x. The FoX package's own Transformer
baseline (RoPE, no gate, FoX's attention kernel) is timed beside them for reference.

Landmark's layer-major scorer against its window-by-window reference (`--landmark-paths`): both
and vanilla on the same model and request, per T the time, its ratio to vanilla, and the aten ops
dispatched and host reads of one call (on a GPU, launches and waits).
Each row also counts, over one more call under `lm_eval_longmem.models.runtime.dispatch_count`, the
aten ops the call dispatched (each a kernel launch on a GPU; views and allocations not counted) and
its host reads (`.item()`, `nonzero`, copies to the CPU...: each drains a GPU's queue), as `ops`,
`host_reads` and `ops_ratio` to vanilla: figures that do not depend on the machine's load, and that
show on a CPU what makes a scorer host-bound on a GPU. With `--chunk-runner`, streamingllm and
longcache are also timed through the chunk runner they score layer by layer now (rows
`streamingllm@runner`, `longcache@runner`: the reference scorer, same results, one chunk through
every layer at a time), so the gain is measured in the same run.

A method that fails at some T (out of memory, refused) gets its error in its row; the others go
on. Methods run one after another (not alternated): read CPU ratios on a shared machine with
care; the targets are meant for the GPU run.

    python benchmarks/method_scoring.py --device cuda --out-json p11.json      # 1B model, T = 4096 16384
    nice -n 5 python benchmarks/method_scoring.py --tiny --device cpu          # tiny model, T = 256 512
    python benchmarks/method_scoring.py --device cuda --methods pi yarn --lengths 8192 --skip-fox
    python benchmarks/method_scoring.py --device cuda --methods landmark --skip-fox --landmark-paths
    nice -n 5 python benchmarks/method_scoring.py --device cpu --hidden 256 --layers 8 --heads 4 --kv-heads 2 \
        --intermediate 512 --vocab 256 --methods streamingllm longcache --chunk-runner --skip-fox   # 4k and 16k
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from infini_memory import PeakMemory, sync  # benchmarks/ is on sys.path when run as a script
from random_checkpoint import release, save_random_checkpoint
from scoring_profile import print_profile, profile_scoring

from lm_eval_longmem.models.runtime.dispatch_count import DispatchCount

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# method -> largest time ratio to vanilla that passes (None: the baseline)
TARGETS = {
    "vanilla": None,
    "pi": 1.05,
    "yarn": 1.05,
    "dynamic_ntk": 1.05,
    "self_extend": 1.1,
    "lm_infinite": 1.1,
    "streamingllm": 2.0,
    "statedclm": 2.0,
    "longcache": 2.0,
    "infini": 1.5,
    "clex": 1.05,
    "landmark": 3.0,
}
METHODS = tuple(TARGETS)
# Methods that score layer by layer, whose chunk runner (`--chunk-runner`) is timed beside them.
LAYER_MAJOR = ("streamingllm", "longcache")
RUNNER_SUFFIX = "@runner"
# Methods also compared to a sibling at the same T: CLEX rotates every key per forward (keys are cached
# before RoPE) and solves its ODE once per model, not per request; YaRN is the static-table RoPE method.
SIBLINGS = {"clex": "yarn"}
FOX_TARGET = 1.2
FOX_BASELINE, FOX, FOX_TRANSFORMER = "transformer(llama-mha)", "fox", "fox-transformer"
SIZES = {  # model shape: the ~1B default and the tiny one of --tiny
    "full": dict(hidden=2048, layers=16, heads=32, kv_heads=8, intermediate=8192, vocab=32000, max_position=4096),
    "tiny": dict(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, vocab=256, max_position=128),
}
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<pad>")


def method_arguments(name: str, args) -> dict:
    """`--model_args` of one method for a model of context C = args.max_position."""
    context = args.max_position
    budget = args.budget or context // 2
    bounded = dict(
        max_context_length=budget, chunk_size=args.chunk or min(512, budget // 4), sink_length=min(32, budget // 8)
    )
    return {
        "vanilla": {"max_length": max(args.lengths)},
        "pi": {"factor": args.factor},
        "yarn": {"factor": args.factor},
        "dynamic_ntk": {"factor": args.factor, "s": 2.0},
        "self_extend": {"window": min(2048, context // 2), "group": 32},
        "lm_infinite": {"factor": args.factor, "global_tokens": 10},
        "streamingllm": bounded,
        "statedclm": bounded,
        "longcache": {**bounded, "span_size": max(1, min(32, budget // 16))},
        "infini": {"segment_length": args.segment or min(2048, context // 2)},
        "clex": {"max_factor": int(args.factor)},  # no trained ODE: NTK with factor 2t-1, the same work
        "landmark": landmark_arguments(context),
    }[name]


def landmark_arguments(context: int) -> dict:
    block, trained = min(64, context // 8), min(512, context)
    return {"block_size": block, "train_context_length": trained, "top_k": min(5, trained // block - 2)}


def word_level_tokenizer():
    """A word-level tokenizer with the special tokens HFLM needs; requests are token ids, so
    its vocabulary may be smaller than the model's."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS + ("word",))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )


def llama_config(args, kv_heads: int, max_position: int):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_position,
        rope_theta=args.rope_theta,
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
    )


def fox_config(args, max_position: int, transformer: bool):
    """FoX (LLaMA), or with `transformer` the package's Transformer (LLaMA) baseline, matched to
    the Llama: same hidden size, layers, heads, MLP width and vocabulary."""
    from lm_eval_longmem.models.fox import ForgettingTransformerConfig, TransformerBaselineConfig

    config_class = TransformerBaselineConfig if transformer else ForgettingTransformerConfig
    return config_class(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_heads=args.heads,
        max_position_embeddings=max_position,
        rope_base=args.rope_theta,
        fuse_norm=False,
        fuse_cross_entropy=False,
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
    )


def request(length: int, continuation: int, vocab: int):
    """(None, context ids, continuation ids): T = `length` tokens in all, the same for every method."""
    import torch

    ids = torch.randint(len(SPECIAL_TOKENS), vocab, (length,), generator=torch.Generator().manual_seed(length)).tolist()
    return (None, ids[: length - continuation], ids[length - continuation :])


def time_scoring(lm, one_request, repeats: int, device: str) -> dict:
    """One warm-up call, then `repeats` timed calls under a fresh peak-memory meter."""
    score = lm._loglikelihood_tokens([one_request], disable_tqdm=True)[0]
    if not isinstance(score, tuple):  # a ScoreFailure
        raise RuntimeError(getattr(score, "detail", repr(score)))
    seconds = []
    with PeakMemory(device) as memory:
        for _ in range(repeats):
            sync(device)
            start = time.perf_counter()
            score = lm._loglikelihood_tokens([one_request], disable_tqdm=True)[0]
            sync(device)
            seconds.append(time.perf_counter() - start)
    with DispatchCount() as count:
        lm._loglikelihood_tokens([one_request], disable_tqdm=True)
    return {
        "seconds": statistics.median(seconds),
        "all_seconds": seconds,
        "loglikelihood": float(score[0]),
        "peak_bytes": memory.start + memory.peak,
        "scoring_bytes": max(0, memory.peak),
        "ops": count.ops,
        "host_reads": count.host_reads,
    }


def use_chunk_runner(lm) -> None:
    """Score through the chunk runner, the reference the layer-major scorers are tested against."""
    lm.scorer = lm.longmem_method.make_chunk_runner_scorer(lm.model)


def measure_model(label: str, pretrained: Path, model_args: dict, args, dtype_name: str) -> list[dict]:
    """Rows of one model/method at every T; errors (loading or scoring) go into the rows."""
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    rows, lm = [], None
    base = {"method": label, "method_args": model_args}
    print(f"{label}: {model_args or '(method picked by the config)'}", flush=True)
    try:
        lm = LongMemLM(pretrained=str(pretrained), device=args.device, dtype=dtype_name, batch_size=1, **model_args)
        if label.endswith(RUNNER_SUFFIX):
            use_chunk_runner(lm)
    except Exception as err:  # noqa: BLE001  one method's failure must not stop the others
        print(f"  {label}: could not load: {err!r}", flush=True)
        return [{**base, "T": T, "error": f"load: {type(err).__name__}: {err}"} for T in args.lengths]
    for T in args.lengths:
        try:
            row = {
                **base,
                "T": T,
                **time_scoring(lm, request(T, args.continuation, args.vocab), args.repeats, args.device),
            }
            row["tokens_per_s"] = T / row["seconds"]
            print(
                f"  {label:>22} T={T:>6}: {row['seconds']:.4f} s, {row['tokens_per_s']:,.0f} tok/s, "
                f"peak {row['peak_bytes'] / 2**30:.3f} GiB, {row['ops']:,} ops, {row['host_reads']} host reads",
                flush=True,
            )
        except Exception as err:  # noqa: BLE001
            row = {**base, "T": T, "error": f"{type(err).__name__}: {err}"}
            print(f"  {label:>22} T={T:>6}: error {row['error'][:300]}", flush=True)
        rows.append(row)
        if args.profile and T == args.lengths[0] and "error" not in row:
            try:
                row["profile"] = profile_scoring(lm, request(T, args.continuation, args.vocab), args.device)
                print_profile(label, T, row["profile"])
            except Exception as err:  # noqa: BLE001  a diagnostic must not lose the timed rows
                print(f"  profile {label} T={T}: failed: {type(err).__name__}: {err}", flush=True)
        release(args.device)
    del lm
    release(args.device)
    return rows


LANDMARK_PATHS = ("vanilla", "landmark", "landmark (window by window)")


def landmark_paths(pretrained: Path, args) -> list[dict]:
    """Landmark's layer-major scorer against the window-by-window one it replaced (still its
    reference) and vanilla, in one run: per T, the median seconds, the ratio to vanilla and the
    ops dispatched and host reads of one scoring call (models/runtime/dispatch_count.py: on a GPU
    each computing op is a launch, each read a wait; Triton launches are not aten ops and are not
    counted: one per layer for the retrieval kernel, one per piece and layer for the grouped softmax's)."""
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM
    from lm_eval_longmem.models.runtime.dispatch_count import count_dispatch

    models = {
        name: LongMemLM(
            pretrained=str(pretrained),
            device=args.device,
            dtype=args.dtype,
            batch_size=1,
            method=name,
            **method_arguments(name, args),
        )
        for name in ("vanilla", "landmark")
    }
    landmark = models["landmark"]
    landmark_scorers = {False: landmark.scorer, True: landmark.longmem_method.make_window_scorer(landmark.model)}
    rows = []
    for T in args.lengths:
        one = request(T, args.continuation, args.vocab)
        for label in LANDMARK_PATHS:
            lm = models[label.split()[0]]
            if lm is landmark:
                lm.scorer = landmark_scorers[label.endswith("(window by window)")]
            row = {"path": label, "T": T, **time_scoring(lm, one, args.repeats, args.device)}
            counted, _ = count_dispatch(lm._loglikelihood_tokens, [one], disable_tqdm=True)
            row.update(ops=counted.ops, host_reads=counted.host_reads)
            rows.append(row)
        base = next(r for r in rows if r["T"] == T and r["path"] == "vanilla")
        for row in rows[-len(LANDMARK_PATHS) :]:
            row["time_ratio"] = row["seconds"] / base["seconds"]
            print(
                f"  {row['path']:>28} T={T:>6}: {row['seconds']:.4f} s, {row['time_ratio']:.2f}x vanilla, "
                f"{row['ops']:,} ops, {row['host_reads']} host reads",
                flush=True,
            )
        release(args.device)
    return rows


def compare(rows: list[dict], baseline: str, targets: dict) -> None:
    """Time and memory ratios of each row to the baseline's row at the same T, and the verdict."""
    reference = {r["T"]: r for r in rows if r["method"] == baseline and "error" not in r}
    for row in rows:
        row["baseline"], row["target"] = baseline, targets.get(row["method"])
        ref = reference.get(row["T"])
        if "error" in row or ref is None:
            row["time_ratio"] = row["memory_ratio"] = row["ops_ratio"] = None
            row["verdict"] = "error" if "error" in row else "no baseline"
            continue
        row["time_ratio"] = row["seconds"] / ref["seconds"]
        row["ops_ratio"] = row["ops"] / ref["ops"]
        # below 1 MiB (a tiny model's resident set) the baseline's scoring memory is noise
        row["memory_ratio"] = row["scoring_bytes"] / ref["scoring_bytes"] if ref["scoring_bytes"] >= 2**20 else None
        if row["method"] == baseline:
            row["verdict"] = "baseline"
        elif row["target"] is None:
            row["verdict"] = "reference"
        else:
            row["verdict"] = "ok" if row["time_ratio"] <= row["target"] else "SLOWER THAN TARGET"


def compare_siblings(rows: list[dict]) -> None:
    """`ratio_to_sibling`: each SIBLINGS method's time over its sibling's at the same T, printed."""
    seconds = {(r["method"], r["T"]): r.get("seconds") for r in rows if "error" not in r}
    for row in rows:
        sibling = SIBLINGS.get(row["method"])
        mine, theirs = seconds.get((row["method"], row["T"])), seconds.get((sibling, row["T"]))
        if sibling and mine and theirs:
            row["sibling"], row["ratio_to_sibling"] = sibling, mine / theirs
            print(f"{row['method']} against {sibling} at T={row['T']}: {mine / theirs:.3f}x the time", flush=True)


def stated_clm_step_figures(pretrained: Path, args) -> list[dict]:
    """Stated-CLM's steady-state step against its chunk runner and vanilla at the first length, printed."""
    from stated_clm_step import print_rows, stated_clm_rows

    length = args.lengths[0]
    rows = stated_clm_rows(
        pretrained,
        method_arguments("statedclm", args),
        method_arguments("vanilla", args),
        request(length, args.continuation, args.vocab),
        args.device,
        args.dtype,
        args.repeats,
        args.stated_compiled,
    )
    print_rows(rows, length)
    return rows


def print_table(rows: list[dict]) -> None:
    def number(value, fmt):
        return "-" if value is None else format(value, fmt)

    print(
        f"\n{'method':>22} {'T':>6} {'tokens/s':>11} {'time x':>7} {'peak GiB':>9} {'scoring GiB':>12} "
        f"{'mem x':>6} {'ops':>8} {'ops x':>6} {'reads':>6} {'target':>7}  "
        f"verdict (ratios to {rows[0]['baseline'] if rows else '-'} at the same T)"
    )
    for r in rows:
        gib = lambda key, r=r: None if key not in r else r[key] / 2**30  # noqa: E731
        target = "-" if r.get("target") is None else f"<={r['target']}x"
        verdict = r["verdict"] if "error" not in r else f"error: {r['error'][:120]}"
        print(
            f"{r['method']:>22} {r['T']:>6} {number(r.get('tokens_per_s'), ',.0f'):>11} "
            f"{number(r.get('time_ratio'), '.3f'):>7} {number(gib('peak_bytes'), '.3f'):>9} "
            f"{number(gib('scoring_bytes'), '.3f'):>12} {number(r.get('memory_ratio'), '.2f'):>6} "
            f"{number(r.get('ops'), ','):>8} {number(r.get('ops_ratio'), '.2f'):>6} "
            f"{number(r.get('host_reads'), 'd'):>6} "
            f"{target:>7}  {verdict}",
            flush=True,
        )


def environment(device: str) -> dict:
    import torch
    import transformers

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    name = torch.cuda.get_device_name(0) if device.startswith("cuda") else f"cpu ({os.cpu_count()} cores)"
    return {
        "device": name,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "triton": triton_version,
        "cuda": torch.version.cuda,
        "python": sys.version.split()[0],
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default=None, help="default: bfloat16 on CUDA, float32 on the CPU")
    parser.add_argument(
        "--tiny", action="store_true", help="a tiny model and T = 256 512 (a CPU run well under a minute)"
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=METHODS,
        default=list(METHODS),
        help="subset of methods (vanilla, the baseline, is always run)",
    )
    parser.add_argument("--skip-fox", action="store_true", help="skip FoX vs its matched Transformer")
    parser.add_argument(
        "--chunk-runner",
        action="store_true",
        help=f"also time {' and '.join(LAYER_MAJOR)} through the chunk runner (rows NAME{RUNNER_SUFFIX})",
    )
    parser.add_argument(
        "--lengths", type=int, nargs="+", help="T, tokens per request (default 4096 16384; tiny 256 512)"
    )
    parser.add_argument(
        "--continuation", type=int, help="scored tokens at the end of each request (default 64; tiny 32)"
    )
    parser.add_argument("--repeats", type=int, help="timed calls after the warm-up (default 3 on CUDA, 1 on the CPU)")
    for name in ("hidden", "layers", "heads", "kv-heads", "intermediate", "vocab"):
        parser.add_argument(
            f"--{name}", type=int, help=f"model {name} (default {SIZES['full'][name.replace('-', '_')]})"
        )
    parser.add_argument("--max-position", type=int, help="max_position_embeddings C (default 4096; tiny 128)")
    parser.add_argument("--rope-theta", type=float, default=10000.0)
    parser.add_argument("--factor", type=float, default=4.0, help="RoPE extension factor C'/C")
    parser.add_argument("--budget", type=int, help="bounded caches' max_context_length (default C/2)")
    parser.add_argument("--chunk", type=int, help="bounded caches' chunk_size (default min(512, budget/4))")
    parser.add_argument("--segment", type=int, help="infini's segment_length (default min(2048, C/2))")
    parser.add_argument(
        "--landmark-paths",
        action="store_true",
        help="also time landmark's layer-major scorer against its window-by-window one and vanilla, with the "
        "ops dispatched and host reads of one call (use with --methods landmark to skip the others)",
    )
    parser.add_argument("--workdir", help="where the random models are saved (default: a temporary directory)")
    parser.add_argument("--out-json", help="also write the rows and the setup here")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also profile one call per method at the first length: GPU busy vs wall time, kernel "
        "launches, host syncs, top host ops and GPU kernels (benchmarks/scoring_profile.py)",
    )
    parser.add_argument(
        "--stated-step",
        action="store_true",
        help="also compare stated-CLM's static-shape step with its chunk runner and vanilla at the first length: "
        "time ratio, ops dispatched, host reads, graph breaks (benchmarks/stated_clm_step.py)",
    )
    parser.add_argument(
        "--stated-compiled", action="store_true", help="with --stated-step, also the step compiled by inductor"
    )
    args = parser.parse_args(argv)
    size = SIZES["tiny" if args.tiny else "full"]
    for key, value in size.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    cuda = args.device.startswith("cuda")
    if cuda:
        import torch

        if not torch.cuda.is_available():
            parser.error("--device cuda: CUDA is not available here (use --device cpu, e.g. with --tiny)")
    args.lengths = args.lengths or ([256, 512] if args.tiny else [4096, 16384])
    args.continuation = args.continuation or (32 if args.tiny else 64)
    args.repeats = args.repeats or (3 if cuda else 1)
    args.dtype = args.dtype or ("bfloat16" if cuda else "float32")
    args.methods = ["vanilla"] + [m for m in args.methods if m != "vanilla"]
    if args.continuation >= min(args.lengths):
        parser.error(f"--continuation {args.continuation} must be shorter than every length {args.lengths}")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    import torch
    from transformers.utils import logging as transformers_logging

    import lm_eval_longmem.models.fox  # noqa: F401  (registers the FoX model types)

    transformers_logging.disable_progress_bar()  # 13 loading bars would bury the progress lines

    dtype = getattr(torch, args.dtype)
    setup = environment(args.device)
    print(
        f"method scoring on {setup['device']} ({args.dtype}), T = {args.lengths}, continuation {args.continuation}, "
        f"median of {args.repeats} after one warm-up",
        flush=True,
    )
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        work = Path(work)
        main_config = llama_config(args, args.kv_heads, args.max_position)
        main_config.mem_id = args.vocab - 1  # method=landmark's token; other methods ignore the key
        print(
            f"model: Llama hidden {args.hidden}, {args.layers} layers, {args.heads}/{args.kv_heads} heads, "
            f"MLP {args.intermediate}, vocab {args.vocab}, C = {args.max_position}",
            flush=True,
        )
        llama_dir = save_random_checkpoint(
            work / "llama", main_config, word_level_tokenizer(), device=args.device, dtype=dtype
        )
        rows = []
        for method in args.methods:
            rows += measure_model(
                method, llama_dir, {"method": method, **method_arguments(method, args)}, args, args.dtype
            )
            if args.chunk_runner and method in LAYER_MAJOR:
                arguments = {"method": method, **method_arguments(method, args)}
                rows += measure_model(method + RUNNER_SUFFIX, llama_dir, arguments, args, args.dtype)
        compare(rows, "vanilla", TARGETS)
        compare_siblings(rows)
        stated_step = stated_clm_step_figures(llama_dir, args) if args.stated_step else None
        paths = landmark_paths(llama_dir, args) if args.landmark_paths else []
        fox_rows, fox_setup = [], None
        if not args.skip_fox:
            longest = max(args.lengths)  # no RoPE limit to refuse at: C = the longest T for all three
            contestants = (
                (FOX_BASELINE, llama_config(args, args.heads, longest), {"method": "vanilla"}),
                (FOX, fox_config(args, longest, transformer=False), {}),
                (FOX_TRANSFORMER, fox_config(args, longest, transformer=True), {}),
            )
            for label, config, model_args in contestants:
                directory = save_random_checkpoint(
                    work / label, config, word_level_tokenizer(), device=args.device, dtype=dtype
                )
                fox_rows += measure_model(label, directory, model_args, args, args.dtype)
                release(args.device)
            compare(fox_rows, FOX_BASELINE, {FOX: FOX_TARGET})
            fox_setup = contestants[1][1].to_dict()
    print_table(rows)
    if fox_rows:
        print_table(fox_rows)
    result = {
        **setup,
        "dtype": args.dtype,
        "lengths": args.lengths,
        "continuation": args.continuation,
        "repeats": args.repeats,
        "model_config": main_config.to_dict(),
        "fox_config": fox_setup,
        "targets": {**TARGETS, FOX: FOX_TARGET},
        "rows": rows + fox_rows,
        "stated_clm_step": stated_step,
        "landmark_paths": paths,
    }
    if args.out_json:
        Path(args.out_json).write_text(json.dumps(result, indent=1, default=str))
    return result


if __name__ == "__main__":
    main()
