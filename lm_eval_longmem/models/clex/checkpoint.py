"""CLEX weights in the authors' checkpoint format: read them from a checkpoint, attach them, export them.

The authors' models hold the CLEX layer inside the base model, so their weight files carry
`model.clex_layer.inv_freq` (theta at t = 1), `model.clex_layer.proj_func.ode_up_proj` (U) and
`model.clex_layer.proj_func.ode_down_proj` (D) beside the ordinary weights, in safetensors or
PyTorch .bin files, sharded or not. transformers' `from_pretrained` drops them as unexpected keys;
`load_clex_weights` reads them back. Our exports carry the same keys (the layer is attached where
theirs lives) and the same `rope_scaling`, so each side loads the other's checkpoints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from lm_eval_longmem.errors import LongMemError
from lm_eval_longmem.models.clex.config_format import LOG_SCALE_KEY, clex_rope_scaling
from lm_eval_longmem.models.clex.scaling import ClexScaling

LAYER_NAME = "clex_layer"
TENSOR_NAMES = ("inv_freq", "proj_func.ode_up_proj", "proj_func.ode_down_proj")
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


class ClexCheckpointError(LongMemError, ValueError):
    """A checkpoint's CLEX weights do not fit the model or its CLEX settings."""


def attach_clex(model, clex: ClexScaling) -> None:
    """Put the layer where the authors' models keep it (`model.model.clex_layer` for Llama)."""
    model.base_model.add_module(LAYER_NAME, clex)


def clex_of(model) -> ClexScaling | None:
    return getattr(model.base_model, LAYER_NAME, None)


def load_clex_weights(clex: ClexScaling, source, param_factor: int) -> bool:
    """Copy a checkpoint's CLEX tensors into `clex`; False when it has none (an untrained ODE)."""
    stored = read_clex_tensors(source) if source else {}
    if not stored:
        return False
    missing = [name for name in TENSOR_NAMES if name not in stored]
    if missing:
        raise ClexCheckpointError(f"{source}: its CLEX layer lacks {', '.join(LAYER_NAME + '.' + m for m in missing)}")
    expected = dict(clex.named_parameters()) | dict(clex.named_buffers())
    for name in TENSOR_NAMES:
        if tuple(stored[name].shape) != tuple(expected[name].shape):
            raise ClexCheckpointError(
                f"{source}: {LAYER_NAME}.{name} has shape {tuple(stored[name].shape)}, but a CLEX layer with "
                f"param_factor={param_factor} on this model's rotary dim {clex.proj_func.rotary_dim} has "
                f"{tuple(expected[name].shape)}. Check param_factor (the checkpoint's rope_scaling) and the model."
            )
    with torch.no_grad():
        for name in TENSOR_NAMES:
            expected[name].copy_(stored[name])
    return True


def read_clex_tensors(source) -> dict[str, torch.Tensor]:
    """The `...clex_layer.*` tensors of a checkpoint (a directory or a cached Hub id), by name inside the layer."""
    found: dict[str, torch.Tensor] = {}
    for path in _weight_files(str(source)):
        for key, read in _tensors_in(path):
            prefix, marker, name = key.rpartition(LAYER_NAME + ".")
            if marker and name in TENSOR_NAMES:
                found[name] = read()
    return found


def _weight_files(source: str) -> list[Path]:
    """The checkpoint's weight files: the single one, or every shard its index names."""
    for single in WEIGHT_FILES:
        index = _file_of(source, single + ".index.json")
        if index is not None:
            weight_map = json.loads(Path(index).read_text("utf-8"))["weight_map"]
            shards = sorted({shard for key, shard in weight_map.items() if LAYER_NAME + "." in key})
            return [p for p in (_file_of(source, s) for s in shards) if p is not None]
        path = _file_of(source, single)
        if path is not None:
            return [path]
    return []


def _file_of(source: str, name: str) -> Path | None:
    if Path(source).is_dir():
        path = Path(source) / name
        return path if path.is_file() else None
    from transformers.utils import cached_file

    found = cached_file(
        source, name, _raise_exceptions_for_missing_entries=False, _raise_exceptions_for_connection_errors=False
    )
    return Path(found) if found else None


def _tensors_in(path: Path):
    """(key, reader) pairs of a weight file, reading a tensor only when asked."""
    if path.suffix == ".safetensors":
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as stored:
            return [(key, lambda key=key: _read_safetensor(path, key)) for key in stored.keys()]
    state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    return [(key, lambda value=value: value) for key, value in state.items()]


def _read_safetensor(path: Path, key: str) -> torch.Tensor:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as stored:
        return stored.get_tensor(key)


def write_clex_config(directory: Path, settings: dict[str, Any], rope_theta: float, base_length: int) -> None:
    """Mark an exported config.json as CLEX the way the authors' code reads it (`rope_scaling`,
    `rope_theta`, `log_scale`, and the base length C as `max_position_embeddings`, whatever the
    base model declared) and the way transformers 5 keeps it (`rope_parameters`)."""
    from lm_eval_longmem.common.atomic_files import write_json

    path = Path(directory) / "config.json"
    config = json.loads(path.read_text("utf-8"))
    scaling = clex_rope_scaling(settings["max_factor"], settings["param_factor"], settings["act"], settings["time_dt"])
    config["rope_scaling"] = scaling
    config["rope_theta"] = rope_theta
    parameters = {k: v for k, v in (config.get("rope_parameters") or {}).items() if k in ("partial_rotary_factor",)}
    config["rope_parameters"] = {
        **parameters,
        **{k: v for k, v in scaling.items() if k != "type"},
        "rope_type": scaling["type"],
        "rope_theta": rope_theta,
    }
    config[LOG_SCALE_KEY] = bool(settings[LOG_SCALE_KEY])
    config["max_position_embeddings"] = int(base_length)
    write_json(path, config, indent=2, sort_keys=True)
