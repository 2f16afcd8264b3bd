"""Reading and editing a transformers-5 config's `rope_parameters` without losing `rope_theta`.

transformers 5 keeps every RoPE setting in `config.rope_parameters` (including `rope_theta`);
replacing the dict, or passing the 4.x `rope_scaling=`, drops the base. We always start from the
standardized dict and add to it.
"""

from __future__ import annotations

from typing import Any

from lm_eval_longmem.errors import UsageError


class NotARopeModelError(UsageError):
    """A RoPE-extension method was asked to change a model that has no rotary position embedding."""


# Per-layer-type RoPE (Gemma 3): a RoPE extension scales the global layers' RoPE and keeps the local
# (sliding-window) layers' own, as Gemma 3's long-context checkpoints do: the Gemma 3 Technical Report
# (arXiv:2503.19786, long context) raises the global layers' base to 1M, keeps the local layers' at 10k
# and interpolates the global layers' positions (factor 8) for 128K; the released configs (e.g.
# google/gemma-3-4b-it) carry rope_scaling {"rope_type": "linear", "factor": 8.0}, which transformers 5's
# Gemma3TextConfig puts into `rope_parameters["full_attention"]` only (`rope_local_base_freq` for the local).
GLOBAL_LAYER_TYPE = "full_attention"


def is_per_layer_type(config, params) -> bool:
    """Whether `params` (a config's rope_parameters) hold one dict per layer type (Gemma 3)."""
    if hasattr(config, "nested_rope_parameter_keys"):
        return bool(config.nested_rope_parameter_keys(params))
    # transformers before 5.3 has no such method: a dict of dicts keyed by layer type
    return isinstance(params, dict) and isinstance(params.get(GLOBAL_LAYER_TYPE), dict)


def rope_parameters(config, method_name: str, per_layer_type: bool = True) -> dict[str, Any]:
    """The config's standardized rope parameters (with per-layer-type RoPE: the global layers' ones, the
    dict a RoPE extension edits, unless `per_layer_type` is False); a clear error if none."""
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
    if is_per_layer_type(config, params):
        if not per_layer_type or not isinstance(params.get(GLOBAL_LAYER_TYPE), dict):
            raise NotARopeModelError(
                f"method={method_name}: this model has per-layer-type RoPE ({sorted(params)}: local layers with "
                "their own theta), and this method reads one rotary table. Nearest working method: pi, ntk or "
                "yarn (they scale the global layers), or streamingllm (bounded cache)."
            )
        params = params[GLOBAL_LAYER_TYPE]
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
    if is_per_layer_type(config, config.rope_parameters):  # the global layers only; the local ones keep theirs
        config.rope_parameters = {**config.rope_parameters, GLOBAL_LAYER_TYPE: new}
    else:
        config.rope_parameters = new
    return new


def rotary_dim(config, params: dict[str, Any] | None = None) -> int:
    """The rotated dims of a head, from `params` (default: the config's single rope parameters)."""
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    params = config.rope_parameters if params is None else params
    return int(head_dim * (params.get("partial_rotary_factor") or 1.0))
