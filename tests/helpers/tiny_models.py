"""Tiny random models of the Llama family and token ids, shared by the tests of the methods that
run decoders layer by layer (bounded caches, Infini-attention)."""

import torch
from transformers import AutoModelForCausalLM


def token_ids(n, seed=0, vocab=60):
    return torch.randint(4, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def tiny_of(config_cls, **extra):
    """A tiny random model of `config_cls` (2 layers unless `extra` says otherwise), seeded."""
    torch.manual_seed(0)
    sizes = dict(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    return AutoModelForCausalLM.from_config(config_cls(**{**sizes, **extra})).eval()


def tiny_of_family(family: str):
    """A tiny Mistral, Qwen2 or Qwen3 (the Llama-family models besides Llama)."""
    from transformers import MistralConfig, Qwen2Config, Qwen3Config

    config_cls = {"mistral": MistralConfig, "qwen2": Qwen2Config, "qwen3": Qwen3Config}[family]
    return tiny_of(config_cls, **({"head_dim": 8} if family == "qwen3" else {}))
