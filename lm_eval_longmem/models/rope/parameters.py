"""Reading and editing a transformers-5 config's `rope_parameters` without losing `rope_theta`.

transformers 5 keeps every RoPE setting in `config.rope_parameters` (including `rope_theta`);
replacing the dict, or passing the 4.x `rope_scaling=`, drops the base. We always start from the
standardized dict and add to it.
"""

from __future__ import annotations

from typing import Any

from lm_eval_longmem.errors import LongMemError


class NotARopeModelError(LongMemError, ValueError):
    """A RoPE-extension method was asked to change a model that has no rotary position embedding."""


def rope_parameters(config, method_name: str) -> dict[str, Any]:
    """The config's standardized (single, not per-layer) rope parameters; a clear error if none."""
    params = getattr(config, "rope_parameters", None)
    if not params and getattr(config, "rope_theta", None) is None:
        raise NotARopeModelError(
            f"method={method_name} changes rotary position embeddings (RoPE), but this model "
            f"({getattr(config, 'model_type', type(config).__name__)}) has none in its config "
            "(no `rope_parameters`). Use it with a RoPE model (Llama, Mistral, Qwen, Phi, ...) or use "
            "method=vanilla."
        )
    if hasattr(config, "standardize_rope_params"):
        config.standardize_rope_params()
    params = config.rope_parameters
    if hasattr(config, "nested_rope_parameter_keys") and config.nested_rope_parameter_keys(params):
        raise NotARopeModelError(
            f"method={method_name}: this model has per-layer-type RoPE settings "
            f"({sorted(params)}), which the RoPE-extension methods do not handle."
        )
    if params.get("rope_theta") is None:
        raise NotARopeModelError(f"method={method_name}: the model's rope_parameters have no rope_theta: {params}")
    return params


def original_length(config, method_name: str, explicit: int | None = None) -> int:
    """C: the pretraining length the extension starts from (explicit, the checkpoint's own
    `original_max_position_embeddings`, or `max_position_embeddings`)."""
    if explicit:
        return int(explicit)
    params = rope_parameters(config, method_name)
    return int(params.get("original_max_position_embeddings") or config.max_position_embeddings)


def set_rope_type(config, method_name: str, rope_type: str, **fields) -> dict[str, Any]:
    """Switch the config to `rope_type` with `fields`, keeping rope_theta and partial_rotary_factor.

    Scaling fields of the previous rope type are dropped (they would confuse the new one)."""
    old = rope_parameters(config, method_name)
    kept = {k: old[k] for k in ("rope_theta", "partial_rotary_factor") if old.get(k) is not None}
    new = {**kept, "rope_type": rope_type, **{k: v for k, v in fields.items() if v is not None}}
    config.rope_parameters = new
    return new


def rotary_dim(config) -> int:
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return int(head_dim * config.rope_parameters.get("partial_rotary_factor", 1.0))
