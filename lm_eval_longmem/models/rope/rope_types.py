"""Our two rope types, registered beside transformers' own (`ROPE_INIT_FUNCTIONS`).

transformers' `dynamic` type differs from the study's dynamic NTK (it rescales from the
original length and keeps a growing cache of the largest length seen), and it has no static
NTK-aware type at all. Registering ours under new names lets a config record them in
`rope_parameters` (so a saved checkpoint says what it uses) while the model builds its
rotary embedding the usual way. Names avoid the substring "dynamic", which would switch on
transformers' own per-forward update; the length-dependent update is `dynamic_update.py`.
"""

from __future__ import annotations

from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS, RotaryEmbeddingConfigMixin

from lm_eval_longmem.models.rope.frequencies import dynamic_ntk_factor, ntk_inv_freq
from lm_eval_longmem.models.rope.parameters import rotary_dim

STATIC_NTK = "longmem_ntk"
LENGTH_SCALED_NTK = "longmem_ntk_length_scaled"


def _static_ntk(config, device=None, seq_len=None, layer_type=None):
    params = config.rope_parameters
    if layer_type is not None:  # per-layer-type RoPE (Gemma 3): this layer type's own parameters
        params = params[layer_type]
    inv_freq = ntk_inv_freq(params["rope_theta"], rotary_dim(config, params), params["factor"])
    return inv_freq.to(device) if device is not None else inv_freq, 1.0


def length_scaled_ntk_inv_freq(config, length: int | None, layer_type: str | None = None):
    params = config.rope_parameters
    if layer_type is not None:  # per-layer-type RoPE (Gemma 3): this layer type's own parameters
        params = params[layer_type]
    training = params["training_length"]
    factor = dynamic_ntk_factor(
        params["s"], int(length or training), training, params["original_max_position_embeddings"]
    )
    return ntk_inv_freq(params["rope_theta"], rotary_dim(config, params), factor)


def _length_scaled_ntk(config, device=None, seq_len=None, layer_type=None):
    inv_freq = length_scaled_ntk_inv_freq(config, int(seq_len) if seq_len is not None else None, layer_type)
    return inv_freq.to(device) if device is not None else inv_freq, 1.0


def _validator(required: set[str]):
    def validate(self, rope_parameters, ignore_keys=None):
        missing = required - set(rope_parameters)
        if missing:
            raise KeyError(f"rope_parameters of rope_type={rope_parameters['rope_type']!r} miss {sorted(missing)}")

    return validate


def register() -> None:
    """Idempotent: make our rope types known to transformers (and quiet its validation)."""
    ROPE_INIT_FUNCTIONS.setdefault(STATIC_NTK, _static_ntk)
    ROPE_INIT_FUNCTIONS.setdefault(LENGTH_SCALED_NTK, _length_scaled_ntk)
    setattr(RotaryEmbeddingConfigMixin, f"_validate_{STATIC_NTK}_rope_parameters", _validator({"factor"}))
    setattr(
        RotaryEmbeddingConfigMixin,
        f"_validate_{LENGTH_SCALED_NTK}_rope_parameters",
        _validator({"s", "training_length", "original_max_position_embeddings"}),
    )


register()
