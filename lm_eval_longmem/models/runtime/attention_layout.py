"""One description per decoder family of how its attention is laid out, read by every method that
computes attention itself (the bounded caches, Infini-attention) or reroutes the model's own
(Self-Extend, LM-Infinite), instead of each keeping its own list of model types.

A family's fixed traits (fused projections, q/k norms, the norms around each block, RoPE per layer
type) come from `FAMILIES`; the ones a checkpoint sets (partial rotary, soft-capping, the query
scale, sliding-window layers) are read from its config and modules. A model type missing from
`FAMILIES` has no layout: the methods that need one refuse it in one line.

Sources: transformers 5's modeling files of each family (`models/<family>/modeling_<family>.py`):
Llama/Mistral/Qwen2 `x + attn(norm(x))`, `x + mlp(norm(x))`; Qwen3 and Gemma 3 normalize q and k per
head before RoPE; Phi-3 projects q, k, v with one fused `qkv_proj` and rotates the first
`partial_rotary_factor` of each head; Gemma 2/3 put a norm after attention and around the MLP
("sandwich"), scale queries by `query_pre_attn_scalar**-0.5`, soft-cap logits
(`cap * tanh(x / cap)`, Gemma 2; Gemma 3 configs set no attention cap) and run sliding-window layers
(`layer_types`); Gemma 3 gives local and global layers their own RoPE (`rope_parameters` per type).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lm_eval_longmem.errors import LongMemError
from lm_eval_longmem.models.checkpoint.model_type_names import STUDY_MODEL_TYPE


class UnsupportedArchitectureError(LongMemError, ValueError):
    """The model's decoder is not one the layer-by-layer loop knows how to run."""


@dataclass(frozen=True)
class FamilyTraits:
    """What a family's modeling code fixes, whatever the checkpoint."""

    fused_qkv: bool = False  # one `qkv_proj` (q, then k, then v) instead of q_proj/k_proj/v_proj
    qk_norm: bool = False  # per-head q_norm/k_norm before RoPE
    sandwich_norms: bool = False  # post_attention_layernorm on the attention output; pre/post MLP norms
    rope_per_layer_type: bool = False  # rotary_emb(x, positions, layer_type); rope_parameters per type
    scaled_embedding: bool = False  # embeddings times sqrt(hidden_size) (in embed_tokens, or in the model's forward)


FAMILIES: dict[str, FamilyTraits] = {
    "llama": FamilyTraits(),
    "mistral": FamilyTraits(),
    "qwen2": FamilyTraits(),
    "qwen3": FamilyTraits(qk_norm=True),
    "phi3": FamilyTraits(fused_qkv=True),
    "gemma2": FamilyTraits(sandwich_norms=True, scaled_embedding=True),
    "gemma3_text": FamilyTraits(qk_norm=True, sandwich_norms=True, rope_per_layer_type=True, scaled_embedding=True),
}

# Model types that are another family's architecture under their own name: the Landmark study's
# checkpoints are Llamas (landmark/study_format.py).
READ_AS_FAMILY: dict[str, str] = {STUDY_MODEL_TYPE: "llama"}


@dataclass(frozen=True)
class AttentionLayout:
    family: str
    traits: FamilyTraits
    num_layers: int
    rotary_fraction: float = 1.0  # the leading share of each head RoPE rotates (Phi-3: partial_rotary_factor)
    attn_softcap: float | None = None  # logits -> cap * tanh(logits / cap) before the softmax
    final_softcap: float | None = None  # the same on the output logits
    sliding_window: int | None = None
    # per layer: its type ("full_attention" / "sliding_attention"); all "full_attention" when the config has none
    layer_types: tuple[str, ...] = field(default_factory=tuple)

    @property
    def sliding_layers(self) -> tuple[int, ...]:
        if not self.sliding_window:
            return ()
        return tuple(i for i, kind in enumerate(self.layer_types) if kind == "sliding_attention")

    def traits_line(self) -> str:
        """The family's traits in words, for messages and `methods NAME`."""
        parts = []
        if self.traits.fused_qkv:
            parts.append("fused qkv_proj")
        if self.rotary_fraction < 1:
            parts.append(f"partial rotary {self.rotary_fraction:g}")
        if self.attn_softcap:
            parts.append(f"attention soft-capping {self.attn_softcap:g}")
        if self.sliding_layers:
            parts.append(f"{len(self.sliding_layers)} sliding-window layers ({self.sliding_window})")
        if self.traits.rope_per_layer_type:
            parts.append("per-layer-type RoPE")
        return ", ".join(parts) or "Llama layout"


def _rotary_fraction(config) -> float:
    params = getattr(config, "rope_parameters", None) or {}
    if isinstance(params, dict) and "partial_rotary_factor" in params:
        return float(params["partial_rotary_factor"] or 1.0)
    return float(getattr(config, "partial_rotary_factor", None) or 1.0)


def _applied_softcap(config) -> float | None:
    """The attention soft-cap the model's own attention applies: transformers before 5.3 ran Gemma 2 under
    SDPA, which silently drops the cap (since 5.3 SDPA refuses it and Gemma 2 loads eager), so a method
    that must score as the loaded model does drops it there too."""
    cap = getattr(config, "attn_logit_softcapping", None) or None
    return None if getattr(config, "_attn_implementation", None) == "sdpa" else cap


def attention_layout(config, who: str = "this method") -> AttentionLayout:
    """The layout of `config`'s family; UnsupportedArchitectureError (one line) when it has none."""
    model_type = getattr(config, "model_type", None)
    model_type = READ_AS_FAMILY.get(model_type, model_type)
    traits = FAMILIES.get(model_type)
    if traits is None:
        raise UnsupportedArchitectureError(
            f"{who}: this model is {model_type!r}, whose attention layout is not described (known families: "
            f"{', '.join(FAMILIES)}). Nearest working method: a RoPE extension (pi, ntk, yarn) on a RoPE model, "
            "or method=vanilla."
        )
    num_layers = int(config.num_hidden_layers)
    window = getattr(config, "sliding_window", None)
    if not getattr(config, "use_sliding_window", True):
        window = None
    types = tuple(getattr(config, "layer_types", None) or ())
    if len(types) != num_layers:  # one window for every layer (Mistral), or none
        types = ("sliding_attention" if window else "full_attention",) * num_layers
    return AttentionLayout(
        family=model_type,
        traits=traits,
        num_layers=num_layers,
        rotary_fraction=_rotary_fraction(config),
        attn_softcap=_applied_softcap(config),
        final_softcap=getattr(config, "final_logit_softcapping", None) or None,
        sliding_window=window or None,
        layer_types=types,
    )
