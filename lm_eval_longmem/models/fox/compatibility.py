"""Which checkpoints are FoX-family, and which long-memory methods fit them.

FoX is an architecture, not a patch: its forget gate is part of the trained weights. So
`method=fox` selects a FoX checkpoint (and is picked by itself for one), and methods that
patch another architecture's attention, RoPE or cache do not apply to it. The wrapper and
the tasks ask before any model is built; configs may be objects or config.json dicts. The
method says what it needs (`LongMemMethod.rewrites_rope`, `needs_fox_checkpoint`,
`leaves_model_as_trained`), so this machinery names no method but FoX itself.
"""

from __future__ import annotations

from lm_eval_longmem.errors import UsageError
from lm_eval_longmem.models.fox.configuration_fox import (
    FOX_MODEL_TYPES,
    ForgettingTransformerConfig,
    TransformerBaselineConfig,
)

FOX_MODEL_TYPE = ForgettingTransformerConfig.model_type
TRANSFORMER_BASELINE_MODEL_TYPE = TransformerBaselineConfig.model_type

OFFICIAL_CHECKPOINTS = tuple(
    f"zhixuan-lin/{name}-760m-longcrawl64-48b"
    for name in ("fox-pro", "transformer-pro", "fox-llama", "transformer-llama")
)


class ArchitectureMismatchError(UsageError):
    """A method was asked of a checkpoint whose architecture it does not apply to."""


def model_type_of(config) -> str | None:
    if isinstance(config, dict):
        return config.get("model_type")
    return getattr(config, "model_type", None)


def is_fox_family(config) -> bool:
    return model_type_of(config) in FOX_MODEL_TYPES


def how_to_get_a_fox_checkpoint() -> str:
    return (
        "Pass pretrained=<a FoX checkpoint>: one of the official ones ("
        + ", ".join(OFFICIAL_CHECKPOINTS)
        + ") or a directory written by the training module's FoX recipe "
        "(lm-eval-longmem train training/recipes/fox.yaml, once the training module is installed)."
    )


def check_method_fits(config, method, source: str = "the model") -> None:
    """Raise `ArchitectureMismatchError` when `method` (a `LongMemMethod` class or instance)
    cannot run `config`'s architecture."""
    fox = is_fox_family(config)
    if method.needs_fox_checkpoint and not fox:
        raise ArchitectureMismatchError(
            f"method={method.name} needs a Forgetting Transformer checkpoint, but {source} is a "
            f"{model_type_of(config) or 'model of unknown type'!r} model. FoX is an architecture trained "
            "with its forget gate, not a method that can be applied to another model. " + how_to_get_a_fox_checkpoint()
        )
    if not fox or method.needs_fox_checkpoint:
        return
    if method.rewrites_rope:
        why = (
            "FoX has no RoPE (its forget gate replaces positional encoding), so there are no rotary "
            "frequencies to extend"
            if not _uses_rope(config)
            else "this checkpoint's RoPE is the FoX code's own (config.rope_base), not transformers' "
            "rope_parameters that the RoPE methods rewrite"
        )
        raise ArchitectureMismatchError(
            f"method={method.name} does not apply to {source}, a {model_type_of(config)!r} checkpoint: {why}. "
            "Use method=fox (or leave method= out: a FoX checkpoint selects it by itself)."
        )
    if method.leaves_model_as_trained:
        why = "a FoX-family checkpoint runs as trained under method=fox, so results record it as FoX"
    else:
        why = "it patches the attention and cache of Llama-family models"
    raise ArchitectureMismatchError(
        f"method={method.name} does not apply to {source}, a {model_type_of(config)!r} checkpoint: {why}. "
        "Use method=fox (or leave method= out: a FoX checkpoint selects it by itself)."
    )


def _uses_rope(config) -> bool:
    if isinstance(config, dict):
        return bool(config.get("use_rope", model_type_of(config) == TRANSFORMER_BASELINE_MODEL_TYPE))
    return bool(getattr(config, "use_rope", False))
