"""Helpers for the RoPE-extension tests: load the tiny model through a method as the wrapper does."""

from __future__ import annotations

import torch
from transformers import AutoConfig, AutoModelForCausalLM

from lm_eval_longmem.models.method_registry import build_method


def load_with_method(directory, method: str, attn_implementation: str = "sdpa", **args):
    chosen = build_method(method, args)
    config = AutoConfig.from_pretrained(directory)
    chosen.prepare_config(config)
    model = AutoModelForCausalLM.from_pretrained(directory, config=config, attn_implementation=attn_implementation)
    return chosen.prepare_model(model).eval()


def token_ids(batch: int, length: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(4, 60, (batch, length), generator=generator)  # the tiny vocabulary's words
