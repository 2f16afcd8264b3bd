"""Plugging a `PartRule` into a loaded transformers model.

One attention name, `longmem_part_attention`, is registered with transformers'
AttentionInterface (and with its mask interface, as SDPA's boolean masks). Each attention
module of the model gets a `longmem_attention` plan (its rule, the kernel the model was loaded
with, the rotary embedding to read inverse frequencies from), and the model switches to that
name. The model's own attention module still projects, rotates and caches queries and keys
as usual, so any Llama/Mistral/Qwen-style model and transformers' DynamicCache work unchanged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from lm_eval_longmem.models.attention.band_attention import band_attention, band_kernel_applies
from lm_eval_longmem.models.attention.part_attention import PartRule, part_attention
from lm_eval_longmem.models.rope.parameters import (
    GLOBAL_LAYER_TYPE,
    NotARopeModelError,
    is_per_layer_type,
    rope_parameters,
)
from lm_eval_longmem.models.rope.rotation import the_rotary_embedding

ATTENTION_NAME = "longmem_part_attention"
logger = logging.getLogger(__name__)


@dataclass
class AttentionPlan:
    rule: PartRule | None  # None: the layer keeps the model's own attention (Gemma 3's sliding-window layers)
    backend: str  # "sdpa" or "eager": how each block of the parts is computed
    rotary: torch.nn.Module  # read its frequencies at call time (they follow .to(device))
    method_name: str
    inv_freq_name: str = "inv_freq"  # Gemma 3: "full_attention_inv_freq", the global layers' table

    @property
    def inv_freq(self) -> torch.Tensor:
        return getattr(self.rotary, self.inv_freq_name)


# dropout before scaling, in transformers' own order (sdpa/eager attention forwards): kvpress wraps every
# registered attention function when it is imported and passes `dropout` as the sixth positional argument.
def longmem_part_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    plan: AttentionPlan | None = getattr(module, "longmem_attention", None)
    if plan is None:
        raise RuntimeError(
            f"attn_implementation={ATTENTION_NAME!r} is set on a model whose attention modules were not "
            "prepared by a longmem method (method=self_extend or lm_infinite)."
        )
    if dropout:
        raise ValueError(f"method={plan.method_name} is an inference-time method: attention dropout is not supported.")
    if plan.rule is None:  # a local layer: its own sliding-window attention, from the mask transformers built
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, **kwargs)
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    position_ids = kwargs.get("position_ids")
    if plan.backend == "sdpa" and band_kernel_applies(query, attention_mask):
        output = band_attention(plan.rule, query, key, value, scaling, position_ids, plan.inv_freq)
    else:
        output = part_attention(
            plan.rule, query, key, value, attention_mask, scaling, position_ids, plan.inv_freq, plan.backend
        )
    return output, None


def register() -> None:
    ALL_ATTENTION_FUNCTIONS.register(ATTENTION_NAME, longmem_part_attention_forward)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION_NAME, sdpa_mask)


def kernel_for(attn_implementation: str | None) -> str:
    """The kernel computing the parts, from the implementation the model was loaded with."""
    if attn_implementation == "eager":
        return "eager"
    if attn_implementation and attn_implementation.startswith("flash_attention"):
        # The parts are not one causal attention, so the flash-attn package's own entry points do
        # not fit; PyTorch's bundled FlashAttention kernel computes each distance band instead.
        logger.warning(
            "%s: the two-part attention computes its distance bands with PyTorch's bundled FlashAttention "
            "kernel (CUDA, fp16/bf16, no padding; otherwise PyTorch's fused masked kernels); results are the same.",
            attn_implementation,
        )
    return "sdpa"


def refuse_soft_capping(config, method_name: str, what: str) -> None:
    """Gemma 2 caps its logits (cap * tanh(logits / cap)) before the softmax, which our attention
    replacements (`what`) do not compute: refuse in one line rather than drop the cap."""
    cap = getattr(config, "attn_logit_softcapping", None)
    if cap:
        raise NotARopeModelError(
            f"method={method_name}: this model soft-caps its attention logits (attn_logit_softcapping={cap:g}, "
            f"Gemma 2), which {what} does not compute. Nearest working method: pi, ntk or yarn "
            "(RoPE scaling), or streamingllm (bounded cache)."
        )


def rotary_attention_modules(model, method_name: str) -> list:
    """The model's attention modules, which project, rotate and cache q/k themselves: projected
    apart (Llama, Qwen, Gemma) or fused (Phi-3's qkv_proj; its partial rotary is followed by
    `rotate_by`, which turns only the rotary dims). One clear refusal when there are none."""
    found = [m for m in model.modules() if (hasattr(m, "q_proj") or hasattr(m, "qkv_proj")) and hasattr(m, "layer_idx")]
    if not found:
        raise NotARopeModelError(
            f"method={method_name}: found no attention modules (with q_proj or qkv_proj) in {type(model).__name__}. "
            "Nearest working method: pi, ntk or yarn (RoPE scaling)."
        )
    return found


def install(model, rule: PartRule, method_name: str):
    """Route every attention module of `model` through `rule`; returns the model."""
    register()
    refuse_soft_capping(model.config, method_name, "the two-part attention")
    config = model.config
    rope_parameters(config, method_name)  # a clear error for a model without RoPE
    per_layer_type = is_per_layer_type(config, config.rope_parameters)
    if per_layer_type:
        # Gemma 3: the rule runs on the global layers with their own table; the local (sliding-window)
        # layers keep their attention, whose distances never pass their window (1024 in the releases).
        inv_freq_name = f"{GLOBAL_LAYER_TYPE}_inv_freq"
        found = [m for m in model.modules() if isinstance(getattr(m, inv_freq_name, None), torch.Tensor)]
        if len(found) != 1:
            raise NotARopeModelError(
                f"method={method_name}: expected one rotary embedding with {inv_freq_name} in {type(model).__name__}, "
                f"found {len(found)}. Nearest working method: pi, ntk or yarn (they scale the global layers)."
            )
        rotary = found[0]
    else:
        inv_freq_name = "inv_freq"
        rotary = the_rotary_embedding(model, method_name)
    current = model.config._attn_implementation
    backend = getattr(model, "_longmem_attention_backend", None) or kernel_for(current)
    attention_modules = rotary_attention_modules(model, method_name)
    plan = AttentionPlan(rule, backend, rotary, method_name, inv_freq_name)
    local = AttentionPlan(None, backend, rotary, method_name, inv_freq_name)
    layer_types = getattr(config, "layer_types", None) or []
    for module in attention_modules:
        is_local = per_layer_type and layer_types[module.layer_idx] != GLOBAL_LAYER_TYPE
        module.longmem_attention = local if is_local else plan
    model._longmem_attention_backend = backend
    model.set_attn_implementation(ATTENTION_NAME)
    return model


register()
