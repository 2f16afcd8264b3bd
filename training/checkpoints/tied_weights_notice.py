"""accelerate's "Removed shared tensor {...} while saving" notice, kept out of checkpoint saves
where the removed tensors are ones the model ties by design.

Saving a checkpoint with safetensors, accelerate drops every tensor that shares storage with
another and warns, at every save, that reloading should be checked. For a model whose class
declares the tie (transformers' `_tied_weights_keys`, e.g. SmolLM2's `lm_head.weight` =
`model.embed_tokens.weight`), loading ties it again, so the notice says nothing. Any other
removed tensor still warns.
"""

from __future__ import annotations

import ast
import contextlib
import logging

ACCELERATE_LOGGER = "accelerate.utils.other"
_NOTICE_START, _NOTICE_END = "Removed shared tensor ", " while saving"


class _DropDeclaredTies(logging.Filter):
    def __init__(self, tied: set[str]):
        super().__init__()
        self.tied = tied

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()  # accelerate may prefix it with "[RANK n] "
        start, end = message.find(_NOTICE_START), message.find(_NOTICE_END)
        if start < 0 or end < start:
            return True
        try:
            removed = ast.literal_eval(message[start + len(_NOTICE_START) : end])
        except (ValueError, SyntaxError):
            return True
        return not (isinstance(removed, set) and removed and removed <= self.tied)


def declared_ties(model) -> set[str]:
    """The parameter names `model` ties to another, as its state dict names them: its own class's
    ties and those of any module inside it (a training wrapper around the causal LM, as CLEX's and
    Landmark's trainings save, names them "model.lm_head.weight"); none where the config unties them."""
    named = getattr(model, "named_modules", None)
    modules = list(named()) if callable(named) else [("", model)]
    found = set()
    for prefix, module in modules:
        config = getattr(module, "config", None)
        if config is not None and not getattr(config, "tie_word_embeddings", True):
            continue
        keys = getattr(module, "_tied_weights_keys", None) or {}
        found.update(f"{prefix}.{key}" if prefix else key for key in keys)
    return found


@contextlib.contextmanager
def quiet_declared_ties(model):
    """Within the block, accelerate's notice is dropped when it names only `model`'s declared ties."""
    logger = logging.getLogger(ACCELERATE_LOGGER)
    drop = _DropDeclaredTies(declared_ties(model))
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)
