"""The Infini-attention checkpoint format: a Hugging Face checkpoint plus the gates, beside it.

A directory written by `save_infini_checkpoint` (the training module's last step) holds

* the model's weights and `config.json` as `save_pretrained` writes them (any PEFT adapters
  merged in first), with `"longmem_method": "infini"` and `"longmem_method_args"` (segment
  length, update rule, beta init) recorded, so `--model longmem --model_args pretrained=<dir>`
  selects Infini-attention with the arguments it was trained with;
* `infini_gates.safetensors`: one float32 tensor `beta` of shape [num_layers, num_heads], the
  gate logits of every layer's heads, metadata `format` = FORMAT.

The gates are kept out of the weights file so that the checkpoint stays loadable by
`AutoModelForCausalLM` (as the base model, without unexpected-key warnings). On a live model
the gates are the submodule `infini_gates` (a `MemoryGates`), so `.to()`, `.parameters()` and a
training loop's optimizer see them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch

from lm_eval_longmem.errors import LongMemError
from lm_eval_longmem.models.compressive_memory.gates import MemoryGates

GATES_FILE = "infini_gates.safetensors"
BETA_KEY = "beta"
FORMAT = "lm-eval-longmem/infini-gates/1"
GATES_ATTRIBUTE = "infini_gates"
METHOD_NAME = "infini"


class IncompleteCheckpointError(LongMemError, ValueError):
    """A checkpoint records method=infini but its gates are missing or do not fit the model."""


def gates_of(model) -> MemoryGates | None:
    return getattr(model, GATES_ATTRIBUTE, None)


def attach_gates(model, gates: MemoryGates) -> MemoryGates:
    model.add_module(GATES_ATTRIBUTE, gates)
    return gates


def read_gates(source) -> torch.Tensor | None:
    """The stored beta [layers, heads] of a checkpoint (a directory or a cached Hub id), or None."""
    from safetensors import safe_open

    path = _gates_path(str(source)) if source else None
    if path is None:
        return None
    with safe_open(path, framework="pt") as stored:
        found = (stored.metadata() or {}).get("format")
        if found != FORMAT:
            raise IncompleteCheckpointError(
                f"{path} is not an Infini-attention gates file (format {found!r}, expected {FORMAT!r})"
            )
        return stored.get_tensor(BETA_KEY)


def load_gates(model, beta_init: float, num_layers: int, num_heads: int) -> tuple[MemoryGates, bool]:
    """Attach gates to `model`: the checkpoint's own when it has them (True), else fresh ones
    at `beta_init` (False)."""
    gates = MemoryGates(num_layers, num_heads, beta_init, device=model.get_input_embeddings().weight.device)
    stored = read_gates(getattr(model, "name_or_path", None))
    if stored is not None:
        if tuple(stored.shape) != (num_layers, num_heads):
            raise IncompleteCheckpointError(
                f"{model.name_or_path}/{GATES_FILE} holds gates for {tuple(stored.shape)} (layers, heads), "
                f"but the model has {num_layers} layers of {num_heads} heads."
            )
        with torch.no_grad():
            gates.beta.copy_(stored)
    return attach_gates(model, gates), stored is not None


def save_infini_checkpoint(model, directory, args: Any, tokenizer=None) -> Path:
    """Write an Infini-attention checkpoint that `pretrained=<directory>` loads with no `method=`.

    `model`: the causal LM (or a PEFT model around it, whose adapters are merged) carrying its
    `infini_gates`; `args`: the method's arguments (the `InfiniArgs` dataclass or a dict)."""
    from safetensors.torch import save_file

    from lm_eval_longmem.models.checkpoint.method_record import record_method

    if hasattr(model, "merge_and_unload"):  # PEFT: ship plain weights, adapters folded in
        gates = gates_of(model) or gates_of(model.get_base_model())
        model = model.merge_and_unload()
    else:
        gates = gates_of(model)
    if gates is None:
        raise ValueError(
            "save_infini_checkpoint: the model carries no Infini gates (prepare it with method=infini first)"
        )
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    record_method(model.config, METHOD_NAME, dataclasses.asdict(args) if dataclasses.is_dataclass(args) else dict(args))
    model._modules.pop(GATES_ATTRIBUTE, None)  # weights only: the gates go to their own file
    try:
        model.save_pretrained(directory)
    finally:
        attach_gates(model, gates)
    beta = gates.beta.detach().float().cpu().contiguous()
    metadata = {"format": FORMAT, "num_layers": str(beta.shape[0]), "num_heads": str(beta.shape[1])}
    save_file({BETA_KEY: beta}, str(directory / GATES_FILE), metadata=metadata)
    if tokenizer is not None:
        tokenizer.save_pretrained(directory)
    return directory


def _gates_path(source: str) -> str | None:
    if Path(source).is_dir():
        path = Path(source) / GATES_FILE
        return str(path) if path.is_file() else None
    from transformers.utils import cached_file

    return cached_file(
        source, GATES_FILE, _raise_exceptions_for_missing_entries=False, _raise_exceptions_for_connection_errors=False
    )
