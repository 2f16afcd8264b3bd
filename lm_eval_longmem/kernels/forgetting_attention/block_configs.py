"""Autotune candidates per input precision and head dim, pruned to the device's shared memory.

Per precision: fp32 inputs multiply with IEEE FMA dots (never TF32), whose register tiles are twice
the size of bf16's, so fp32 configs sized like the 16-bit ones spill to local memory; fp32 has
its own smaller candidates (the compiled registers and spills, per config, are in
docs/kernels.md, from benchmarks/kernel_resources.py).

Pruned by shared memory: a config needing more than the device has fails when it loads, after it
was compiled (some fit an H100 and not an A100 or an sm_86/89 card). ``shared_memory_pruner``
keeps the configs whose estimate fits the device the launch is on, and always at least one, the
smallest.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import triton

from .common import triton_interpreter_enabled

# (BLOCK_M, BLOCK_N, warps, stages) or (BLOCK_M, BLOCK_N, warps, stages, largest head dim it is for)
Choice = tuple[int, ...]
SharedBytes = Callable[[int, int, int, int, int], int]  # (block_m, block_n, head_dim, stages, elem size) -> bytes

MAX_HEAD_DIM = 128

# Read once, as Triton reads it when the kernels are defined.
INTERPRETED = triton_interpreter_enabled()


def block_configs(
    half_choices: list[Choice],
    fp32_choices: list[Choice],
    interpreted_choice: Choice,
    decode_choices: list[Choice] = (),
):
    """The autotune list: the 16-bit candidates, the fp32 ones and the decode ones (a launch with
    ``DECODE=True``: a few queries, so BLOCK_M = 16), each tagged with what it is for; one fixed
    small config under the interpreter, where autotuning would only time the CPU emulation."""
    if INTERPRETED:
        return [_config(interpreted_choice, "any", "any")]
    return (
        [_config(c, "16-bit", "prefill") for c in half_choices]
        + [_config(c, "fp32", "prefill") for c in fp32_choices]
        + [_config(c, "any", "decode") for c in decode_choices]
    )


def _config(choice: Choice, precision: str, phase: str) -> triton.Config:
    block_m, block_n, warps, stages, *largest = choice
    config = triton.Config({"BLOCK_M": block_m, "BLOCK_N": block_n}, num_warps=warps, num_stages=stages)
    config.precision, config.phase = precision, phase
    config.max_head_dim = largest[0] if largest else MAX_HEAD_DIM
    return config


def configs_for(
    configs: list[triton.Config], dtype: torch.dtype, head_dim: int, decode: bool = False
) -> list[triton.Config]:
    """The candidates meant for inputs of ``dtype``, this head dim and phase (any device)."""
    precision = "fp32" if dtype == torch.float32 else "16-bit"
    phase = "decode" if decode and any(getattr(c, "phase", "") == "decode" for c in configs) else "prefill"
    return [
        c
        for c in configs
        if getattr(c, "precision", "any") in (precision, "any")
        and getattr(c, "phase", "any") in (phase, "any")
        and head_dim <= getattr(c, "max_head_dim", 10**9)
    ]


def device_shared_memory(device: torch.device) -> int:
    """Shared memory one block may use on this CUDA device (bytes)."""
    return _shared_memory_of(device.index if device.index is not None else torch.cuda.current_device())


@functools.cache
def _shared_memory_of(device_index: int) -> int:
    return triton.runtime.driver.active.utils.get_device_properties(device_index)["max_shared_mem"]


def shared_memory_pruner(shared_bytes: SharedBytes):
    """An ``early_config_prune`` for ``triton.autotune`` over kernels whose first argument is ``Q``
    and that take ``HEAD_DIM``: the candidates for the input's precision and head dim whose
    estimated shared memory (``shared_bytes``) fits the launch's device."""

    def prune(configs, named_args, **kwargs):
        q = named_args["Q"]
        head_dim = kwargs.get("HEAD_DIM", named_args.get("HEAD_DIM"))
        candidates = configs_for(configs, q.dtype, head_dim, bool(kwargs.get("DECODE", False))) or list(configs)
        needs = {
            id(c): shared_bytes(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], head_dim, c.num_stages, q.element_size())
            for c in candidates
        }
        limit = device_shared_memory(q.device)
        fitting = [c for c in candidates if needs[id(c)] <= limit]
        return fitting or [min(candidates, key=lambda c: needs[id(c)])]

    prune.shared_bytes = shared_bytes  # the estimate, for the ahead-of-time report beside the compiled figure
    return prune
