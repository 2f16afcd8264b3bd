"""A byte-level GPT-2 BPE vocabulary small enough to build in a test, for FoX's JSON tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

# A few merges so that BPE has something to merge; every byte is in the vocabulary.
MERGES = ("Ġ t", "h e", "Ġt he", "Ġ a", "Ġ s", "e r", "i n", "o n")


def write_byte_level_bpe(directory: Path) -> tuple[Path, Path]:
    """vocab.json and merges.txt of a byte-level BPE: 256 byte symbols, the merges, <|endoftext|>."""
    from tokenizers.pre_tokenizers import ByteLevel

    directory.mkdir(parents=True, exist_ok=True)
    vocab = {symbol: i for i, symbol in enumerate(sorted(ByteLevel.alphabet()))}
    for merge in MERGES:
        vocab["".join(merge.split())] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    vocab_file, merges_file = directory / "vocab.json", directory / "merges.txt"
    vocab_file.write_text(json.dumps(vocab), encoding="utf-8")
    merges_file.write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n", encoding="utf-8")
    return vocab_file, merges_file


def json_tokenizer(directory: Path):
    from lm_eval_longmem.models.fox.json_gpt2_tokenizer import JSONGPT2Tokenizer

    vocab_file, merges_file = write_byte_level_bpe(directory)
    return JSONGPT2Tokenizer(vocab=str(vocab_file), merges=str(merges_file))


# Pro switches on: output gate, output norm, QK-norm, KV-shift (as the released fox-pro).
PRO_SWITCHES = dict(use_output_gate=True, use_output_norm=True, qk_norm=True, use_k_shift=True, use_v_shift=True)


def build_tiny_fox(directory: Path, seed: int = 0, **overrides) -> Path:
    """A 2-layer FoX (Pro switches on, random weights) with the released models' tokenizer
    convention (JSON-escaped byte-level BPE, BOS = <|endoftext|>), saved like a checkpoint."""
    import torch

    from lm_eval_longmem.models.fox import ForgettingTransformerConfig, ForgettingTransformerForCausalLM

    tokenizer = json_tokenizer(directory / "bpe")
    end = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    settings = dict(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_heads=4,
        hidden_ratio=2,
        max_position_embeddings=512,
        bos_token_id=end,
        eos_token_id=end,
        fgate_type="full",
        **PRO_SWITCHES,
    )
    settings.update(overrides)
    torch.manual_seed(seed)
    model = ForgettingTransformerForCausalLM(ForgettingTransformerConfig(**settings))
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
