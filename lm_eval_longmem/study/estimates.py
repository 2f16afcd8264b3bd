"""How long each step of a study should take on this machine, for `study --dry-run`.

An order of magnitude, not a promise: the model's parameter count N (from its config.json,
when it is on this machine, else the study's `base_parameters`) and its width and depth give
the floating-point work, 6 N per trained token and 2 N per token read at evaluation, plus the
attention's (2 x layers x width x context per token read, three times that when training);
the rate is a matrix multiply timed here on the evaluation device. Real runs are slower (memory
traffic, kernel launches, generation loops, Python), so estimates are lower bounds, and the
tokens a suite reads are counted from its options (LongBench's and RULER's sample counts are
their published sizes).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from pathlib import Path
from typing import Any

# Samples in lm-eval's longbench group (21 datasets), and per RULER task and length (lm-eval's default).
LONGBENCH_SAMPLES = 4750
RULER_TASKS = 13
RULER_SAMPLES = 500
TREC_TOKENS_PER_SHOT = 20  # "Question: ...\nType: ...\n" in LongBench's TREC format


@dataclasses.dataclass(frozen=True)
class ModelSize:
    parameters: float
    layers: int | None = None
    hidden: int | None = None


def model_size(model_args: dict[str, Any], fallback: float | None) -> ModelSize | None:
    """From the model's config.json on this machine (a folder, the Hub cache, the embedded model)."""
    config = _local_config(model_args.get("pretrained"))
    if config is None:
        return ModelSize(fallback) if fallback else None
    d, layers = config.get("hidden_size"), config.get("num_hidden_layers")
    ff = config.get("intermediate_size") or (4 * d if d else None)
    vocab = config.get("vocab_size") or 0
    if not (d and layers and ff):
        return ModelSize(fallback) if fallback else None
    parameters = layers * (4 * d * d + 3 * d * ff) + vocab * d
    return ModelSize(float(parameters), layers, d)


def _local_config(pretrained) -> dict | None:
    try:
        if pretrained is None:
            from lm_eval_longmem.models.checkpoint.default_model import default_model_target

            path = default_model_target() / "config.json"
        elif Path(str(pretrained)).is_dir():
            path = Path(str(pretrained)) / "config.json"
        else:
            from huggingface_hub import try_to_load_from_cache

            found = try_to_load_from_cache(str(pretrained), "config.json")
            path = Path(found) if isinstance(found, str) else None
        return json.loads(path.read_text("utf-8")) if path is not None and path.is_file() else None
    except (OSError, ValueError, ImportError):
        return None


def training_flops(size: ModelSize, tokens: int, seq_len: int) -> float:
    attention = 6 * size.layers * size.hidden * seq_len if size.layers else 0
    return tokens * (6 * size.parameters + attention)


def reading_flops(size: ModelSize, reads: list[tuple[int, int]]) -> float:
    """`reads`: (tokens read, their context length) pairs."""
    total = 0.0
    for tokens, context in reads:
        attention = 2 * size.layers * size.hidden * context if size.layers else 0
        total += tokens * (2 * size.parameters + attention)
    return total


def suite_reads(part_name: str, metadata: dict[str, Any], model_args: dict[str, Any], suite) -> list[tuple[int, int]]:
    """(tokens, context) the part's lm_eval run reads, from the suite's options (defaults where unset)."""
    reads = []
    if part_name == "core" or part_name.startswith("ppl:"):  # our tasks: their options say what they read
        if "ppl_lengths" in metadata:
            windows = metadata.get("ppl_windows", 4)
            reads += [(windows * n, n) for n in metadata["ppl_lengths"]]
        if "pk_lengths" in metadata:
            cells = len(metadata.get("pk_depths", [0, 25, 50, 75, 100])) * metadata.get("pk_samples", 2)
            reads += [(cells * n, n) for n in metadata["pk_lengths"]]
        if "trec_shots" in metadata:
            questions = metadata.get("trec_questions", 200)
            reads += [(questions * s * TREC_TOKENS_PER_SHOT, s * TREC_TOKENS_PER_SHOT) for s in metadata["trec_shots"]]
    elif part_name == "longbench":
        length = model_args["max_length"]
        reads.append((LONGBENCH_SAMPLES * length, length))
    elif part_name == "ruler":
        reads += [(RULER_TASKS * RULER_SAMPLES * n, n) for n in metadata["max_seq_lengths"]]
    return reads


@functools.cache
def matmul_rate(device: str = "cpu") -> tuple[float, str]:
    """(floating-point operations per second, what was timed) of a square matrix multiply here."""
    import torch

    on_gpu = device.startswith("cuda") and torch.cuda.is_available()
    size, dtype = (4096, torch.bfloat16) if on_gpu else (512, torch.float32)
    where = torch.device(device if on_gpu else "cpu")
    a = torch.randn(size, size, device=where, dtype=dtype)
    a @ a  # warm-up
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < 0.2:
        a @ a
        count += 1
    if on_gpu:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    name = torch.cuda.get_device_name(where) if on_gpu else "CPU"
    if device.startswith("cuda") and not on_gpu:
        name = "no GPU here: the CPU"
    return 2 * size**3 * count / seconds, f"{name}, {'bf16' if on_gpu else 'fp32'}"


def duration(flops: float | None, rate: float, processes: int = 1) -> str:
    if flops is None:
        return "unknown (the model's config is not on this machine: give base_parameters)"
    seconds = flops / rate / max(1, processes)
    if seconds < 60:
        return f"~{max(1, round(seconds))} s"
    if seconds < 3600:
        return f"~{round(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"~{seconds / 3600:.1f} h"
    return f"~{seconds / 86400:,.0f} days"
