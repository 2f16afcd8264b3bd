"""A local checkpoint folder holds what a model load needs, checked by name before anything loads.

transformers answers a folder without its config, its weights or its tokenizer files with three
different tracebacks, after lm-eval has started the model load. The file names are those
`save_pretrained` writes (safetensors or .bin, whole or sharded with an index; a tokenizer's
fast, SentencePiece or vocabulary files). Imports nothing heavy.
"""

from __future__ import annotations

import glob
import os

from lm_eval_longmem.errors import UsageError

CONFIG_FILE = "config.json"
WEIGHT_PATTERNS = (
    "model.safetensors",
    "*.safetensors",
    "model.safetensors.index.json",
    "pytorch_model*.bin",
    "pytorch_model.bin.index.json",
    "*.gguf",
)
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
    "vocab.json",
    "vocab.txt",
    "tiktoken.model",
)
_WHAT_A_FOLDER_HOLDS = (
    "A checkpoint folder holds config.json, the weights (model.safetensors, or pytorch_model.bin, or "
    "shards with their index) and the tokenizer files, as save_pretrained writes them"
)


class IncompleteCheckpointError(UsageError):
    """`pretrained=` names a local folder that lacks a file every model load needs."""


def check_checkpoint_folder(folder: str, separate_tokenizer: bool = False) -> None:
    """One line naming the first missing piece of `folder`: its config, its weights, its tokenizer
    (not asked when `tokenizer=` names another source)."""
    if not os.path.isfile(os.path.join(folder, CONFIG_FILE)):
        raise IncompleteCheckpointError(f"{folder} has no {CONFIG_FILE}. {_WHAT_A_FOLDER_HOLDS}.")
    if not any(glob.glob(os.path.join(glob.escape(folder), pattern)) for pattern in WEIGHT_PATTERNS):
        raise IncompleteCheckpointError(
            f"{folder} has no model weights: model.safetensors is missing (nor pytorch_model.bin, nor shards). "
            f"{_WHAT_A_FOLDER_HOLDS}."
        )
    if not separate_tokenizer and not any(os.path.isfile(os.path.join(folder, name)) for name in TOKENIZER_FILES):
        raise IncompleteCheckpointError(
            f"{folder} has no tokenizer files: tokenizer.json is missing (nor tokenizer.model, vocab.json, ...). "
            f"{_WHAT_A_FOLDER_HOLDS}; or name the tokenizer with tokenizer=... in --model_args."
        )
