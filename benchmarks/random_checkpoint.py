"""Random-weight checkpoints for the GPU benchmarks: no download, any shape, loaded like real ones."""

from __future__ import annotations

import gc
from pathlib import Path


def release(device: str) -> None:
    """Give freed tensors back (the CUDA caching allocator keeps them otherwise)."""
    import torch

    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def save_random_checkpoint(directory, config, tokenizer, *, device: str = "cpu", dtype=None) -> Path:
    """A random-weight model of ``config`` saved with ``tokenizer`` like a checkpoint, so the code
    under test loads it by path as it would a real one. Initialised on ``device`` (a 1B model on a
    GPU never visits the CPU's initialiser); seeded, so every run measures the same weights."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype or torch.bfloat16)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    del model
    release(device)
    return Path(directory)
