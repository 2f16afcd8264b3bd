"""A tiny random model of each decoder family the methods are checked on (issue 39), built here and
saved like a real checkpoint with the tiny Llama's word-level tokenizer: hidden 32, 2 layers (Gemma:
one sliding-window layer and one global layer), 4 query heads over 2 KV heads, context 128."""

from __future__ import annotations

import shutil

QK_GAIN = 12.0
# Every family the method x family table covers, by transformers model_type.
FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text", "phi3")

COMMON = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=3,
    tie_word_embeddings=False,
)
# What each family's tiny config adds: its own traits at small sizes, each active on a 44-token input
# unless it would change vanilla itself past the methods' reach (sliding windows stay above the input).
EXTRA = {
    "llama": {},
    "mistral": {"sliding_window": 256},
    "qwen2": {},
    "qwen3": {"head_dim": 8},
    "gemma2": {
        "head_dim": 8,
        "query_pre_attn_scalar": 16,
        "attn_logit_softcapping": 0.5,
        "final_logit_softcapping": 3.0,
        "sliding_window": 64,
        "layer_types": ["sliding_attention", "full_attention"],
    },
    "gemma3_text": {
        "head_dim": 8,
        "query_pre_attn_scalar": 16,
        "sliding_window": 64,
        "layer_types": ["sliding_attention", "full_attention"],
        "rope_parameters": {
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
        },
    },
    "phi3": {"partial_rotary_factor": 0.5, "sliding_window": None, "original_max_position_embeddings": 128},
}


def build_family_model(family: str, directory, tokenizer_dir, seed: int = 0):
    """The tiny `family` model saved to `directory`, with the tokenizer of `tokenizer_dir`."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    model = family_model(family, len(tokenizer), seed)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def family_model(family: str, vocab_size: int, seed: int = 0):
    """The tiny random `family` model in memory (what `build_family_model` saves)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(family, vocab_size=vocab_size, **COMMON, **EXTRA[family])
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name:  # Gemma's RMSNorm weights start at 0 (scale 1 + w): move them so a mistake shows
                parameter.add_(0.1 * torch.randn_like(parameter))
            if any(part in name for part in ("q_proj", "k_proj", "qkv_proj")):
                # logits of order 1 (random init gives ~1e-3), so positions, caps and scales change the scores
                parameter.mul_(QK_GAIN)
    return model.eval()


def copy_tokenizer(source, destination) -> None:
    for path in source.iterdir():
        if "token" in path.name or path.name == "special_tokens_map.json":
            shutil.copy(path, destination / path.name)


def with_longrope_factors(directory, destination):
    """A copy of a family checkpoint with LongRoPE factors in its config, as a Phi-3 checkpoint ships them
    (trained to 32 tokens, extended to 128; short factors 1, long ones rising). Per-layer-type RoPE
    (Gemma 3) is copied unchanged: the method refuses it before reading factors."""
    import json

    shutil.copytree(directory, destination)
    config = json.loads((destination / "config.json").read_text())
    params = config.get("rope_parameters") or {}
    if "rope_theta" not in params:
        return destination
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    half = int(head_dim * (params.get("partial_rotary_factor") or config.get("partial_rotary_factor") or 1.0)) // 2
    config["rope_parameters"] = {
        **params,
        "rope_type": "longrope",
        "factor": 4.0,
        "original_max_position_embeddings": 32,
        "short_factor": [1.0] * half,
        "long_factor": [1.0 + i for i in range(half)],
    }
    config.pop("original_max_position_embeddings", None)
    (destination / "config.json").write_text(json.dumps(config))
    return destination


def with_landmark_layout(directory, destination):
    """A copy of a family checkpoint whose config names its last token `<landmark>`, in the layout keys
    of a landmark checkpoint (blocks of 4, trained length 32): the weights stay random."""
    import json

    shutil.copytree(directory, destination)
    config = json.loads((destination / "config.json").read_text())
    vocab = config.get("vocab_size") or config["text_config"]["vocab_size"]
    config.update(mem_id=vocab - 1, mem_freq=3, train_context_length=32, include_landmark_in_loss=True)
    (destination / "config.json").write_text(json.dumps(config))
    return destination
