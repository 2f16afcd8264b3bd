"""kvpress presses against our bounded caches at the same number of kept KV entries: forgetting
curve and passkey on the embedded SmolLM2-135M-Instruct at 4x compression, `vanilla` (nothing
removed) as the reference measured in the same run.

Every cell is a real `lm_eval.simple_evaluate(model="longmem", ...)` run of `forgetting_curve`
or `longmem_passkey`:

* a kvpress press (`method=kvpress,press=NAME,compression_ratio=0.75`) compresses each request
  once, after prefilling its context less the last token: for the forgetting curve the context
  part is [bos] S [bos] plus the unscored first half of the second S (2L + 2 - ceil(L/2) tokens),
  for passkey the whole prompt. Of those n prefilled tokens it keeps int(n * (1 - ratio)) per
  layer and head (kvpress's `compute_n_kept`; measured on the model too, see `measured_kept`);
  the context's last token, the scored continuation or the answer then attend to those plus
  their own new entries.
* a bounded cache (`statedclm`, `streamingllm`, `longcache`) streams the whole input in chunks
  and keeps at most B entries after each chunk, with B = the press's kept count for that
  length's prefill. B depends on the length, so each length is its own run. Chunks are
  min(32, B // 4) tokens, sinks 4 (kvpress StreamingLLMPress's n_sink), LongCache's spans
  min(32, B // 8) tokens (its recalled share stays half the budget, as its authors set it).
* `vanilla` keeps the whole context.

Intervals (95%): forgetting curve, percentile bootstrap over the per-sample copy accuracies;
passkey, Wilson score interval of the success count; differences against vanilla, paired
bootstrap over the same samples (every method sees the same sequences and keys).

kvpress runs only in the second virtualenv (transformers 5.2, kvpress 0.5.5):

    nice -n 5 .venv-kvpress/bin/python benchmarks/kvpress_vs_bounded.py            # 24 min on 2 busy cores
    nice -n 5 .venv-kvpress/bin/python benchmarks/kvpress_vs_bounded.py --quick    # ~1.5 min
    nice -n 5 .venv/bin/python benchmarks/kvpress_vs_bounded.py --no-kvpress       # bounded rows only
    .venv-kvpress/bin/python benchmarks/kvpress_vs_bounded.py --presses snapkv "pyramidkv:window_size=16,beta=4"
    python benchmarks/kvpress_vs_bounded.py --from-json runs/kvpress_vs_bounded.json   # the tables again

At these lengths kvpress's PyramidKVPress (window_size 64, beta 20) gives every layer the same
budget, i.e. it is SnapKV; `pyramidkv:window_size=16,beta=4` makes a real pyramid (24..168 per
layer at L=256, mean 96).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from intervals import wilson_interval  # benchmarks/ is on sys.path when run as a script

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

# observed_attention reads attention weights, which only eager attention returns (a from_pretrained option)
DEFAULT_PRESSES = (
    "snapkv",
    "tova",
    "expected_attention",
    "knorm",
    "streamingllm",
    "pyramidkv",
    "observed_attention:attn_implementation=eager",
)
BOUNDED = ("statedclm", "streamingllm", "longcache")
KVPRESS_MISSING = (
    "kvpress is not installed in this Python ({python}); run this benchmark with .venv-kvpress/bin/python, "
    "or get it with `pip install 'lm-eval-longmem[kvpress]'` or `VENV=.venv-kvpress SETUP_EXTRAS=dev,kvpress "
    "./scripts/setup.sh` (or pass --no-kvpress for the bounded-cache and vanilla rows only)"
)
BOOTSTRAP_RESAMPLES = 10_000
SINK_LENGTH = 4  # kvpress StreamingLLMPress's n_sink default


# --- pure parts: kept entries, settings, intervals, table ------------------------------------
def kept_entries(context_tokens: int, compression_ratio: float) -> int:
    """Entries a kvpress press keeps per layer and head of an n-token context (its
    `compute_n_kept`: int(n * (1 - ratio)), at least 1 unless the ratio is 1)."""
    if compression_ratio >= 1.0:
        return 0
    return max(1, int(context_tokens * (1 - compression_ratio)))


def fc_prefill_tokens(length: int) -> int:
    """Tokens a press compresses for a forgetting-curve request: its context part, the sequence up
    to the first scored token ([bos] S [bos] S[:floor(L/2)], 2L + 2 - ceil(L/2) tokens), less its
    last token (method=kvpress prefills a request's context less its last token; that token and
    the continuation then run against the compressed cache)."""
    from lm_eval_longmem.tasks.forgetting_curve.sequences import scored_range

    return scored_range(length)[0] - 1


def fc_scored_tokens(length: int) -> int:
    from lm_eval_longmem.tasks.forgetting_curve.sequences import num_scored

    return num_scored(length)


def pk_prefill_tokens(prompt_tokens: int) -> int:
    """Tokens a press compresses for a passkey request: the prompt less its last token."""
    return prompt_tokens - 1


def bounded_settings(method: str, budget: int, sink_length: int = SINK_LENGTH) -> dict:
    """--model_args of a bounded cache keeping `budget` entries: chunks of min(32, B // 4), sinks
    `sink_length`, and for LongCache spans of min(32, B // 8) (recalled share: its default half)."""
    chunk = max(1, min(32, budget // 4))
    args = {"method": method, "max_context_length": budget, "chunk_size": chunk, "sink_length": sink_length}
    if method == "longcache":
        args["span_size"] = max(1, min(32, budget // 8))
    return args


def pyramid_is_uniform(context_tokens: int, compression_ratio: float, window_size: int = 64, beta: int = 20) -> bool:
    """Whether kvpress's PyramidKVPress falls back to one budget for every layer at this context
    (its `get_layer_budget` needs q_len >= max_num >= min_num >= window_size for a pyramid)."""
    budget = context_tokens * (1 - compression_ratio)
    min_num = budget / beta
    max_num = budget * 2 - min_num
    if max_num >= context_tokens - window_size:
        max_num = context_tokens - window_size
        min_num = budget * 2 - max_num
    return not (context_tokens >= max_num >= min_num >= window_size)


def bootstrap_interval(values, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0, level: float = 0.95):
    """Percentile bootstrap interval of the mean of `values` ((nan, nan) when empty)."""
    import numpy as np

    values = np.asarray(list(values), dtype=float)
    if values.size == 0:
        return (float("nan"), float("nan"))
    if values.size == 1 or np.all(values == values[0]):
        return (float(values[0]), float(values[0]))
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(resamples, values.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return (float(low), float(high))


def _fmt_interval(mean, interval) -> str:
    if mean is None:
        return "n/a"
    return f"{mean:.2f} [{interval[0]:.2f}, {interval[1]:.2f}]"


def _fmt_diff(mean, interval) -> str:
    if mean is None:
        return "n/a"
    return f"{mean:+.2f} [{interval[0]:+.2f}, {interval[1]:+.2f}]"


def _kept_text(kept) -> str:
    if kept is None:
        return "n/a"
    if isinstance(kept, (list, tuple)):
        low, high = kept
        return str(low) if low == high else f"{low}-{high}"
    return str(kept)


def render_table(report: dict) -> str:
    """The Markdown table: kept entries and accuracies [95% interval] per length, one row per method."""
    fc_lengths, pk_lengths = report["fc_lengths"], report["pk_lengths"]
    header = (
        ["method"]
        + [f"kept fc L={L}" for L in fc_lengths]
        + [f"kept pk {N}" for N in pk_lengths]
        + [f"fc copy acc L={L}" for L in fc_lengths]
        + [f"passkey acc {N}" for N in pk_lengths]
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for row in report["rows"]:
        if row.get("error") and not any(c.get("mean") is not None for c in row["cells"].values()):
            error = row["error"].replace("|", "\\|")  # a pipe would split the Markdown cell
            lines.append(f"| {row['label']} | failed: {error} |" + " |" * (len(header) - 2))
            continue
        cells = [row["label"]]
        cells += [_kept_text(row["cells"].get(f"fc@{L}", {}).get("kept")) for L in fc_lengths]
        cells += [_kept_text(row["cells"].get(f"pk@{N}", {}).get("kept")) for N in pk_lengths]
        for key in [f"fc@{L}" for L in fc_lengths] + [f"pk@{N}" for N in pk_lengths]:
            cell = row["cells"].get(key, {})
            cells.append("failed" if cell.get("error") else _fmt_interval(cell.get("mean"), cell.get("interval")))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_differences(report: dict) -> str:
    """Method - vanilla per cell (paired bootstrap interval) and the ratio of mean scores."""
    fc_lengths, pk_lengths = report["fc_lengths"], report["pk_lengths"]
    keys = [f"fc@{L}" for L in fc_lengths] + [f"pk@{N}" for N in pk_lengths]
    header = (
        ["method"]
        + [f"Δ fc L={L}" for L in fc_lengths]
        + [f"Δ passkey {N}" for N in pk_lengths]
        + ["fc ratio", "passkey ratio"]
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for row in report["rows"]:
        if row["kind"] == "reference":
            continue
        diffs = row.get("vs_vanilla", {})
        cells = [row["label"]]
        for key in keys:
            d = diffs.get(key)
            cells.append(_fmt_diff(d["difference"], d["interval"]) if d else "n/a")
        for task in ("fc", "pk"):
            ratio = diffs.get(f"{task}_ratio")
            cells.append("n/a" if ratio is None else f"{ratio:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --- rows ----------------------------------------------------------------------------------
@dataclass
class Row:
    label: str
    kind: str  # "press", "bounded" or "reference"
    name: str  # press name, bounded method or "vanilla"
    fields: dict = field(default_factory=dict)  # extra press fields


def parse_press(spec: str) -> Row:
    """`NAME` or `NAME:field=value,field=value` (kvpress dataclass fields, typed by the method)."""
    from lm_eval.utils import simple_parse_args_string

    name, _, extra = spec.partition(":")
    fields = simple_parse_args_string(extra) if extra else {}
    label = f"kvpress {name}" + (f" ({extra})" if extra else "")
    return Row(label, "press", name.strip().lower(), fields)


def plan_rows(presses, bounded) -> list[Row]:
    rows = [Row("vanilla (full cache)", "reference", "vanilla")]
    rows += [parse_press(spec) for spec in presses]
    rows += [Row(f"{name} (ours, bounded)", "bounded", name) for name in bounded]
    return rows


# --- running -------------------------------------------------------------------------------
def evaluate(task: str, model_args: dict, metadata: dict) -> list[dict]:
    """Per-sample records of one real lm-eval run of `task` (forgetting_curve or longmem_passkey)."""
    import lm_eval

    import lm_eval_longmem

    lm_eval_longmem.register()
    out = lm_eval.simple_evaluate(
        model="longmem", model_args=model_args, tasks=[task], metadata=metadata, log_samples=True
    )
    records = []
    for sample in out["samples"][task]:
        doc = sample["doc"]
        if task == "forgetting_curve":
            curve = sample["curve"]
            if curve.get("status", "ok") != "ok" or "copy" not in curve:
                raise RuntimeError(
                    f"forgetting_curve L={doc['length']}: status {curve.get('status')} "
                    f"{curve.get('detail') or ''}".strip()
                )
            records.append(
                {
                    "length": int(doc["length"]),
                    "sample": int(doc["sample"]),
                    "copy": float(curve["copy"]),
                    "lm": float(curve["lm"]),
                }
            )
        else:
            grid = sample["grid"]
            records.append(
                {
                    "length": int(doc["length"]),
                    "depth": int(doc["depth"]),
                    "sample": int(doc["sample"]),
                    "key": int(doc["key"]),
                    "answer": grid.get("answer"),
                    "correct": float(grid["correct"]),
                    "prompt_tokens": int(doc["prompt_tokens"]),
                }
            )
    _check_against_aggregate(task, out["results"][task], records)
    return records


def _check_against_aggregate(task: str, metrics: dict, records: list[dict]) -> None:
    """The per-sample numbers must give the task's own aggregates (else the samples were misread)."""
    from lm_eval_longmem.tasks.buckets import bucket_tag, tag_width

    lengths = sorted({r["length"] for r in records})
    width = tag_width(lengths)
    for L in lengths:
        if task == "forgetting_curve":
            key, values = f"copy_acc@{bucket_tag(L, width)},none", [r["copy"] for r in records if r["length"] == L]
        else:
            key, values = f"acc@len{bucket_tag(L, width)},none", [r["correct"] for r in records if r["length"] == L]
        if key in metrics and abs(metrics[key] - sum(values) / len(values)) > 1e-9:
            raise RuntimeError(f"{task}: {key} is {metrics[key]} but its samples average {sum(values) / len(values)}")


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return f"{type(err).__name__}: {text}"[:300]


class Runner:
    def __init__(self, args):
        self.args = args
        self.calls = 0
        self.started = time.perf_counter()

    def run(self, label: str, what: str, task: str, model_args: dict, metadata: dict):
        """(records, seconds, error line)."""
        self.calls += 1
        print(f"[{self.calls}/{self.args.total_calls}] {label}: {what} ...", flush=True)
        started = time.perf_counter()
        try:
            records = evaluate(task, {"device": self.args.device, **model_args}, metadata)
            error = None
        except Exception as err:  # noqa: BLE001 - a failing press is one line in its row; the run goes on
            records, error = [], one_line(err)
        seconds = time.perf_counter() - started
        total = (time.perf_counter() - self.started) / 60
        print(f"    {'FAILED: ' + error if error else 'done'} ({seconds:.0f} s; {total:.1f} min so far)", flush=True)
        return records, seconds, error


def fc_metadata(args, lengths) -> dict:
    return {"fc_lengths": list(lengths), "fc_samples": args.fc_samples, "fc_seed": args.seed, "fc_corpus": args.corpus}


def pk_metadata(args, lengths) -> dict:
    return {
        "pk_lengths": list(lengths),
        "pk_depths": list(args.pk_depths),
        "pk_samples": args.pk_samples,
        "pk_seed": args.seed,
    }


def fc_cell(records: list[dict], length: int, kept, seconds: float, error: str | None) -> dict:
    values = [r["copy"] for r in records if r["length"] == length]
    if error or not values:
        return {"kept": kept, "mean": None, "interval": None, "error": error or "no samples", "seconds": seconds}
    mean = sum(values) / len(values)
    return {
        "kept": kept,
        "mean": mean,
        "interval": list(bootstrap_interval(values)),
        "n": len(values),
        "lm_mean": sum(r["lm"] for r in records if r["length"] == length) / len(values),
        "samples": [r for r in records if r["length"] == length],
        "seconds": seconds,
    }


def pk_cell(records: list[dict], length: int, kept, seconds: float, error: str | None) -> dict:
    mine = [r for r in records if r["length"] == length]
    if error or not mine:
        return {"kept": kept, "mean": None, "interval": None, "error": error or "no samples", "seconds": seconds}
    correct = int(sum(r["correct"] for r in mine))
    return {
        "kept": kept,
        "mean": correct / len(mine),
        "correct": correct,
        "n": len(mine),
        "interval": list(wilson_interval(correct, len(mine))),
        "samples": mine,
        "seconds": seconds,
        "prompt_tokens": [min(r["prompt_tokens"] for r in mine), max(r["prompt_tokens"] for r in mine)],
    }


def press_model_args(row: Row, ratio: float) -> dict:
    return {"method": "kvpress", "press": row.name, "compression_ratio": ratio, **row.fields}


def paired_differences(report: dict) -> None:
    """vs_vanilla per row: per cell mean(method - vanilla) over the same samples with a paired
    bootstrap interval, and the ratio of mean scores per task (over the lengths both have)."""
    import numpy as np

    vanilla = next(r for r in report["rows"] if r["kind"] == "reference")
    for row in report["rows"]:
        if row["kind"] == "reference":
            continue
        out, sums = {}, {"fc": [0.0, 0.0], "pk": [0.0, 0.0]}
        for key, cell in row["cells"].items():
            base = vanilla["cells"].get(key, {})
            if cell.get("mean") is None or base.get("mean") is None:
                continue
            field_name = "copy" if key.startswith("fc") else "correct"
            index = ("sample",) if key.startswith("fc") else ("depth", "sample")
            theirs = {tuple(s[i] for i in index): s[field_name] for s in base["samples"]}
            pairs = [
                (s[field_name], theirs[tuple(s[i] for i in index)])
                for s in cell["samples"]
                if tuple(s[i] for i in index) in theirs
            ]
            diff = np.array([a - b for a, b in pairs], dtype=float)
            out[key] = {
                "difference": float(diff.mean()),
                "interval": list(bootstrap_interval(diff)),
                "pairs": len(pairs),
            }
            task = key.split("@")[0]
            sums[task][0] += cell["mean"]
            sums[task][1] += base["mean"]
        for task, (mine, theirs) in sums.items():
            out[f"{task}_ratio"] = mine / theirs if theirs > 0 else None
        row["vs_vanilla"] = out


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for package in ("torch", "transformers", "kvpress", "lm_eval", "lm-eval-longmem", "numpy"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = None
    try:
        found["git_commit"] = (
            subprocess.run(
                ["git", "rev-parse", "HEAD"],
                cwd=Path(__file__).resolve().parent,
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        found["git_commit"] = None
    return found


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    partial.replace(path)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compression-ratio", type=float, default=0.75, help="fraction removed (0.75: 4x)")
    parser.add_argument(
        "--presses",
        nargs="*",
        default=list(DEFAULT_PRESSES),
        help="kvpress presses: NAME or NAME:field=value,field=value",
    )
    parser.add_argument("--bounded", nargs="*", default=list(BOUNDED), choices=list(BOUNDED))
    parser.add_argument("--fc-lengths", type=int, nargs="+", default=[256, 512], help="forgetting-curve L")
    parser.add_argument("--fc-samples", type=int, default=5)
    parser.add_argument("--pk-lengths", type=int, nargs="+", default=[512, 1024], help="passkey prompt tokens")
    parser.add_argument("--pk-depths", type=int, nargs="+", default=[0, 50, 100])
    parser.add_argument("--pk-samples", type=int, default=2, help="keys per length x depth cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus", default="shakespeare", help="forgetting-curve corpus (fc_corpus)")
    parser.add_argument("--sink-length", type=int, default=SINK_LENGTH, help="sinks of the bounded caches")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny run: fc L=64, passkey 256 tokens at depth 50, 1 sample each, presses snapkv and "
        "knorm, bounded streamingllm (flags given explicitly still win)",
    )
    parser.add_argument("--no-kvpress", action="store_true", help="run the bounded caches and vanilla only")
    parser.add_argument("--out-json", default="runs/kvpress_vs_bounded.json")
    parser.add_argument(
        "--from-json", metavar="PATH", help="print the tables of a finished run's JSON again; run nothing"
    )
    return parser


QUICK = {
    "fc_lengths": [64],
    "fc_samples": 1,
    "pk_lengths": [256],
    "pk_depths": [50],
    "pk_samples": 1,
    "presses": ["snapkv", "knorm"],
    "bounded": ["streamingllm"],
}


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.quick:
        given = {a.split("=")[0] for a in (argv if argv is not None else sys.argv[1:]) if a.startswith("--")}
        for name, value in QUICK.items():
            if f"--{name.replace('_', '-')}" not in given:
                setattr(args, name, value)
    if not 0.0 < args.compression_ratio < 1.0:
        parser.error(f"--compression-ratio must be in (0, 1), got {args.compression_ratio}")
    for name in ("fc_samples", "pk_samples"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.no_kvpress:
        args.presses = []
    if args.presses and not args.from_json and importlib.util.find_spec("kvpress") is None:
        parser.exit(2, f"kvpress_vs_bounded.py: error: {KVPRESS_MISSING.format(python=sys.executable)}\n")
    return args


def measure_kept(press_args: dict, prefill: int, device: str, model_cache: dict) -> list[int]:
    """Entries per layer that `method=kvpress` keeps of a `prefill`-token context, measured: one
    request of random tokens through the sequence the method's scorer feeds, its cache read after
    the prefill and one more token."""
    import torch

    from lm_eval_longmem.models.method_registry import build_method

    press_args = {k: v for k, v in press_args.items() if k != "method"}
    attention = press_args.pop("attn_implementation", "sdpa")  # a from_pretrained option, not a press field
    if attention not in model_cache:
        from transformers import AutoModelForCausalLM

        from lm_eval_longmem.models.checkpoint.default_model import default_model_dir

        model_cache.clear()
        model_cache[attention] = (
            AutoModelForCausalLM.from_pretrained(
                str(default_model_dir()), dtype=torch.float32, attn_implementation=attention
            )
            .to(device)
            .eval()
        )
    method = build_method("kvpress", press_args)
    model = method.prepare_model(model_cache[attention])
    sequence = method.make_scorer(model).start_sequence()  # what the scorer feeds a row through
    ids = torch.randint(100, model.config.vocab_size, (prefill + 1,), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        for _ in sequence.feed_pieces(ids.tolist(), read_from=prefill, last=True):
            pass
    return [n - 1 for n in sequence.kept_entries()]


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.from_json:
        return rerender(Path(args.from_json))
    import logging

    for name in ("lm_eval", "lm-eval", "lm_eval_longmem"):
        logging.getLogger(name).setLevel(logging.WARNING)
    rows = plan_rows(args.presses, args.bounded)
    per_length = len(args.fc_lengths) + len(args.pk_lengths)
    args.total_calls = 2 * (1 + len(args.presses)) + per_length * len(args.bounded)
    ratio = args.compression_ratio
    runner = Runner(args)
    out = Path(args.out_json)
    fc_prefill = {L: fc_prefill_tokens(L) for L in args.fc_lengths}
    report = {
        "benchmark": "kvpress_vs_bounded",
        "model": "SmolLM2-135M-Instruct (embedded default)",
        "compression_ratio": ratio,
        "fc_lengths": list(args.fc_lengths),
        "pk_lengths": list(args.pk_lengths),
        "settings": {k: v for k, v in vars(args).items() if k not in ("quick", "out_json", "from_json", "total_calls")},
        "intervals": {
            "forgetting_curve": f"95% percentile bootstrap over per-sample copy accuracy "
            f"({BOOTSTRAP_RESAMPLES} resamples)",
            "passkey": "95% Wilson score interval of the success count",
            "vs_vanilla": "95% paired percentile bootstrap over per-sample differences",
        },
        "versions": versions(),
        "contexts": {
            "fc": {
                str(L): {
                    "context_tokens": fc_prefill[L] + 1,
                    "prefill_tokens": fc_prefill[L],
                    "scored_tokens": fc_scored_tokens(L),
                    "input_tokens": 2 * L + 1,
                    "press_kept": kept_entries(fc_prefill[L], ratio),
                    "bounded_budget": kept_entries(fc_prefill[L], ratio),
                }
                for L in args.fc_lengths
            },
            "pk": {},
        },
        "rows": [],
    }
    print(
        f"kvpress presses vs bounded caches at compression_ratio={ratio} ({1 / (1 - ratio):g}x): "
        f"{args.total_calls} lm-eval runs on {args.device}",
        flush=True,
    )

    # vanilla first: the reference, and its passkey prompts give each length's prompt sizes (hence B)
    results, measured, model_cache = {}, {}, {}
    for row in rows:
        if row.kind == "bounded":
            continue
        model_args = {"method": "vanilla"} if row.kind == "reference" else press_model_args(row, ratio)
        fc = runner.run(
            row.label,
            f"forgetting curve L={args.fc_lengths}",
            "forgetting_curve",
            model_args,
            fc_metadata(args, args.fc_lengths),
        )
        pk = runner.run(
            row.label,
            f"passkey {args.pk_lengths} tokens",
            "longmem_passkey",
            model_args,
            pk_metadata(args, args.pk_lengths),
        )
        results[row.label] = (fc, pk)
        if row.kind == "press" and not (fc[2] and pk[2]):
            for L in args.fc_lengths:
                try:
                    measured[(row.label, L)] = measure_kept(model_args, fc_prefill[L], args.device, model_cache)
                except Exception as err:  # noqa: BLE001 - a check, not a cell
                    measured[(row.label, L)] = one_line(err)
        if row.kind == "reference":
            if fc[2] or pk[2]:
                raise SystemExit(f"kvpress_vs_bounded.py: error: vanilla failed: {fc[2] or pk[2]}")
            for N in args.pk_lengths:
                prompts = sorted({r["prompt_tokens"] for r in pk[0] if r["length"] == N})
                kept = [kept_entries(pk_prefill_tokens(t), ratio) for t in prompts]
                report["contexts"]["pk"][str(N)] = {
                    "prompt_tokens": [prompts[0], prompts[-1]],
                    "prefill_tokens": [pk_prefill_tokens(prompts[0]), pk_prefill_tokens(prompts[-1])],
                    "press_kept": [min(kept), max(kept)],
                    "bounded_budget": max(kept),
                }
    model_cache.clear()

    budgets = {
        **{("fc", L): report["contexts"]["fc"][str(L)]["bounded_budget"] for L in args.fc_lengths},
        **{("pk", N): report["contexts"]["pk"][str(N)]["bounded_budget"] for N in args.pk_lengths},
    }
    for row in rows:
        if row.kind != "bounded":
            continue
        cells = {}
        for (task, length), budget in budgets.items():
            model_args = bounded_settings(row.name, budget, args.sink_length)
            described = ",".join(f"{k}={v}" for k, v in model_args.items() if k != "method")
            if task == "fc":
                records, seconds, error = runner.run(
                    row.label,
                    f"forgetting curve L={length} ({described})",
                    "forgetting_curve",
                    model_args,
                    fc_metadata(args, [length]),
                )
                cells[f"fc@{length}"] = fc_cell(records, length, budget, seconds, error)
            else:
                records, seconds, error = runner.run(
                    row.label,
                    f"passkey {length} tokens ({described})",
                    "longmem_passkey",
                    model_args,
                    pk_metadata(args, [length]),
                )
                cells[f"pk@{length}"] = pk_cell(records, length, budget, seconds, error)
            cells[f"{task}@{length}"]["model_args"] = model_args
        results[row.label] = cells

    for row in rows:
        entry = {"label": row.label, "kind": row.kind, "name": row.name, "fields": row.fields}
        if row.kind == "bounded":
            cells = results[row.label]
        else:
            (fc_records, fc_s, fc_err), (pk_records, pk_s, pk_err) = results[row.label]
            cells = {}
            for L in args.fc_lengths:
                kept = "all" if row.kind == "reference" else report["contexts"]["fc"][str(L)]["press_kept"]
                cells[f"fc@{L}"] = fc_cell(fc_records, L, kept, fc_s, fc_err)
                if (row.label, L) in measured:
                    cells[f"fc@{L}"]["measured_kept"] = measured[(row.label, L)]
            for N in args.pk_lengths:
                kept = "all" if row.kind == "reference" else report["contexts"]["pk"][str(N)]["press_kept"]
                cells[f"pk@{N}"] = pk_cell(pk_records, N, kept, pk_s, pk_err)
            entry["model_args"] = {"method": "vanilla"} if row.kind == "reference" else press_model_args(row, ratio)
        errors = sorted({c["error"] for c in cells.values() if c.get("error")})
        entry["error"] = "; ".join(errors) if errors else None
        entry["cells"] = cells
        report["rows"].append(entry)
    paired_differences(report)
    report["total_minutes"] = (time.perf_counter() - runner.started) / 60
    report["setup_text"] = describe_setup(report)
    report["table_markdown"] = render_table(report)
    report["differences_markdown"] = render_differences(report)
    write_json(out, report)
    print_report(report, out)
    return report


def measured_text(report: dict) -> list[str]:
    """One line per press: kept entries per layer as measured, and whether they match int(n x (1 - ratio))."""
    lines = []
    for row in report["rows"]:
        parts = []
        for L in report["fc_lengths"]:
            value = row["cells"].get(f"fc@{L}", {}).get("measured_kept")
            if value is None:
                continue
            expected = report["contexts"]["fc"][str(L)]["press_kept"]
            if isinstance(value, str):
                parts.append(f"L={L}: not measured ({value})")
                continue
            mean = sum(value) / len(value)
            text = (
                f"L={L}: {expected} in all {len(value)} layers"
                if min(value) == max(value)
                else f"L={L}: {min(value)}-{max(value)} per layer, mean {mean:.1f}"
            )
            if abs(mean - expected) >= 1:
                text += f" (MISMATCH: int(n x (1 - ratio)) = {expected})"
            parts.append(text)
        if parts:
            lines.append(f"  - {row['label']}: " + "; ".join(parts))
    return lines


def lm_baseline_text(report: dict) -> str | None:
    """The forgetting curve's no-memory level: LM accuracy (S after irrelevant text, not after
    itself) per length over the rows; copy accuracy above it is what the cache remembered of S."""
    parts = []
    for L in report["fc_lengths"]:
        values = [
            r["cells"][f"fc@{L}"]["lm_mean"]
            for r in report["rows"]
            if r["cells"].get(f"fc@{L}", {}).get("lm_mean") is not None
        ]
        if values:
            parts.append(f"L={L} {min(values):.2f}-{max(values):.2f}")
    if not parts:
        return None
    return (
        "- forgetting-curve LM accuracy (the same S after irrelevant text: the no-memory level that copy accuracy "
        "is read against), across rows: " + ", ".join(parts)
    )


def print_report(report: dict, out) -> None:
    print()
    print(report["setup_text"])
    print()
    print(report["table_markdown"])
    print()
    print(
        "Against vanilla, same run and samples (method - vanilla [95% paired bootstrap]; ratio = method / vanilla "
        "of the accuracy summed over lengths):"
    )
    print()
    print(report["differences_markdown"])
    failed = [f"- {r['label']}: {r['error']}" for r in report["rows"] if r.get("error")]
    if failed:
        print("\nFailed cells:\n" + "\n".join(failed))
    print(f"\nJSON: {out}   ({report['total_minutes']:.1f} min)")


def rerender(path: Path) -> dict:
    """--from-json: the setup lines and tables again from a finished run's JSON (nothing is run)."""
    report = json.loads(path.read_text(encoding="utf-8"))
    report["setup_text"] = describe_setup(report)
    report["table_markdown"] = render_table(report)
    report["differences_markdown"] = render_differences(report)
    print_report(report, path)
    return report


def describe_setup(report: dict) -> str:
    """The lines above the table: lengths, prefills, kept entries and budgets, how they were checked."""
    ratio, args = report["compression_ratio"], argparse.Namespace(**report["settings"])
    lines = [
        f"SmolLM2-135M-Instruct, compression_ratio={ratio}: presses keep int(n x {1 - ratio:g}) of the n tokens "
        f"they prefill, per layer and head; corpus {args.corpus}, seed {args.seed}; versions: "
        + ", ".join(f"{k} {v}" for k, v in report["versions"].items() if k in ("torch", "transformers", "kvpress"))
    ]
    for L, c in report["contexts"]["fc"].items():
        lines.append(
            f"- forgetting curve L={L}: input {c['input_tokens']} tokens, context {c['context_tokens']} "
            f"([bos] S [bos] + first {int(L) - c['scored_tokens']} of S), press prefill {c['prefill_tokens']} "
            f"(context less its last token), {c['scored_tokens']} scored; press kept {c['press_kept']} -> "
            f"bounded B={c['bounded_budget']}, "
            f"chunk {bounded_settings('statedclm', c['bounded_budget'])['chunk_size']}; "
            f"{args.fc_samples} sample(s)"
        )
    for N, c in report["contexts"]["pk"].items():
        lines.append(
            f"- passkey {N}: prompts {_kept_text(c['prompt_tokens'])} tokens, press prefill "
            f"{_kept_text(c['prefill_tokens'])} (prompt less its last token); press kept "
            f"{_kept_text(c['press_kept'])} -> bounded B={c['bounded_budget']}, chunk "
            f"{bounded_settings('statedclm', c['bounded_budget'])['chunk_size']}; depths {args.pk_depths}%, "
            f"{args.pk_samples} key(s) each"
        )
    lines.append(
        f"- bounded caches: sinks {args.sink_length}, chunk min(32, B//4), longcache spans min(32, B//8); they "
        "hold at most B after each chunk, up to B + chunk within one (longcache stores every entry and "
        "attends to a B-entry selection; statedclm and streamingllm evict). Presses compress once: the "
        "continuation/answer adds to their kept entries."
    )
    measured = measured_text(report)
    if measured:
        lines.append("- press kept entries measured on the model (one prefill of random tokens per length):")
        lines.extend(measured)
    baseline = lm_baseline_text(report)
    if baseline:
        lines.append(baseline)
    uniform = [f"L={L}" for L, c in report["contexts"]["fc"].items() if pyramid_is_uniform(c["prefill_tokens"], ratio)]
    uniform += [
        f"passkey {N}" for N, c in report["contexts"]["pk"].items() if pyramid_is_uniform(c["prefill_tokens"][1], ratio)
    ]
    if any(r["name"] == "pyramidkv" and not r["fields"] for r in report["rows"]) and uniform:
        lines.append(
            f"- pyramidkv (window_size 64, beta 20) gives every layer the same budget at {', '.join(uniform)}: "
            "kvpress builds its pyramid only when budget / beta >= window_size"
        )
    lines.append(
        "- intervals (95%): fc = percentile bootstrap over per-sample copy accuracy; passkey = Wilson score; "
        "with so few samples per cell both are wide, and bootstrap intervals from 5 samples are too narrow"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit("kvpress_vs_bounded.py: interrupted") from None
    except (ValueError, OSError) as err:
        raise SystemExit(f"kvpress_vs_bounded.py: error: {one_line(err)}") from None
