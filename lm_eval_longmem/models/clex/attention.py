"""CLEX's attention: keys cached before RoPE, every key rotated with the current theta_t.

CLEX picks t from the sequence's length so far, and t grows while a sequence is decoded. Keys
rotated once and cached would keep the theta of the step that cached them; the authors' code
instead caches keys before RoPE and rotates all of them with the current theta_t at every step,
so that decoding token by token equals running the whole prefix at once. We do the same inside
transformers' own attention modules:

* the model's rotary embedding is made the identity (inverse frequencies 0: cos 1, sin 0), so
  each attention module projects and caches its keys unrotated, in transformers' DynamicCache;
* a registered attention function (`longmem_clex_<kernel>`) rotates the queries at their
  positions and all keys at theirs with theta_t of the row's own length, optionally scales the
  queries by ln(n)/ln(C) (`log_scale`), then runs the kernel the model was loaded with (SDPA or
  FlashAttention; eager runs as SDPA, the same attention).

log_scale: the authors' FlashAttention path multiplies every query of a forward by
ln(kv_len)/ln(C); we use each query's own length n = position + 1. The two agree for every
decoded token and for the last query of a prompt; ours keeps a token's score independent of
the tokens after it (teacher forcing equals decoding).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from lm_eval_longmem.models.attention.install import refuse_soft_capping, rotary_attention_modules
from lm_eval_longmem.models.attention.part_attention import positions
from lm_eval_longmem.models.clex.scaling import ClexScaling
from lm_eval_longmem.models.rope.parameters import NotARopeModelError
from lm_eval_longmem.models.rope.rotation import rotate_by, the_rotary_embedding

ATTENTION_PREFIX = "longmem_clex_"
METHOD = "clex"


@dataclass
class ClexAttentionPlan:
    clex: ClexScaling
    kernel: str  # the attention implementation that computes the rotated attention ("sdpa", "flash_attention_2")
    log_scale: bool
    # Set by training for one forward: (fractional positions [L], theta_t' [d/2] with gradients).
    training: tuple[torch.Tensor, torch.Tensor] | None = None
    # (position_ids, kv_len, frequencies) of the last layer's call: the layers of one forward share
    # transformers' position_ids tensor, so t is read (a host sync) once per forward, not per layer.
    # Holding the tensor keeps its identity from being reused by another forward's.
    last: tuple | None = None

    def row_frequencies(self, position_ids, query_pos: torch.Tensor, kv_len: int) -> torch.Tensor:
        """theta_t [batch, d/2] of each row's own length (its last query position + 1)."""
        if position_ids is not None and self.last is not None and self.last[0] is position_ids:
            if self.last[1] == kv_len:
                return self.last[2]
        lengths = (query_pos[:, -1] + 1).tolist()
        frequencies = torch.stack([self.clex.frequencies(self.clex.factor_for_length(int(n))) for n in lengths])
        self.last = (position_ids, kv_len, frequencies) if position_ids is not None else None
        return frequencies


def clex_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    plan: ClexAttentionPlan | None = getattr(module, "longmem_clex", None)
    if plan is None:
        raise RuntimeError("a longmem_clex attention implementation is set on a model that method=clex did not prepare")
    batch, _, q_len, _ = query.shape
    kv_len = key.shape[2]
    if plan.training is not None:
        fractional, frequencies = plan.training
        query_pos = fractional[None, -q_len:].expand(batch, q_len)
        key_pos = fractional[None, :kv_len].expand(batch, kv_len)
    else:
        position_ids = kwargs.get("position_ids")
        query_pos, key_pos = positions(position_ids, batch, q_len, kv_len, query.device)
        frequencies = plan.row_frequencies(position_ids, query_pos, kv_len)
    query = rotate_by(query, query_pos, frequencies)
    key = rotate_by(key, key_pos, frequencies)
    if plan.log_scale:
        lengths = (query_pos.to(torch.float32) + 1).clamp(min=1.0)
        query = (query.float() * (torch.log(lengths) / math.log(plan.clex.original_length))[:, None, :, None]).to(
            query.dtype
        )
    attend = ALL_ATTENTION_FUNCTIONS[plan.kernel]
    return attend(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)


def _kernel_for(attn_implementation: str | None) -> str:
    if attn_implementation and attn_implementation.startswith(ATTENTION_PREFIX):  # prepared before
        return attn_implementation[len(ATTENTION_PREFIX) :]
    if attn_implementation and attn_implementation.startswith("flash_attention"):
        return attn_implementation
    return "sdpa"


def install_clex_attention(model, clex: ClexScaling, log_scale: bool) -> ClexAttentionPlan:
    """Route `model`'s attention through CLEX (see the module docstring); returns the shared plan."""
    refuse_soft_capping(model.config, METHOD, "CLEX's attention")
    kernel = _kernel_for(model.config._attn_implementation)
    name = ATTENTION_PREFIX + kernel
    ALL_ATTENTION_FUNCTIONS.register(name, clex_attention_forward)
    ALL_MASK_ATTENTION_FUNCTIONS.register(name, ALL_MASK_ATTENTION_FUNCTIONS[kernel])
    rotary = the_rotary_embedding(model, METHOD)
    if float(getattr(rotary, "attention_scaling", 1.0)) != 1.0:
        raise NotARopeModelError(
            f"method=clex: the model's rotary embedding scales cos/sin by {rotary.attention_scaling} "
            "(a YaRN-style rope type); CLEX starts from plain RoPE."
        )
    plan = ClexAttentionPlan(clex, kernel, log_scale)
    for module in rotary_attention_modules(model, METHOD):
        module.longmem_clex = plan
    with torch.no_grad():  # cos 1, sin 0: the modules cache their keys unrotated
        rotary.inv_freq.zero_()
        if isinstance(getattr(rotary, "original_inv_freq", None), torch.Tensor):
            rotary.original_inv_freq.zero_()
    model.set_attn_implementation(name)
    return plan
