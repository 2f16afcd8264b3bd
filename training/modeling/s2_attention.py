"""Shifted sparse attention (S2-Attn, LongLoRA §3.2), for training only.

The sequence is cut into groups of G tokens (G = seq_len / 4 by default) and each token attends
causally within its group; half of the heads first roll the sequence by G/2, so their groups
straddle the others' boundaries and information flows between groups. The export goes back to
full attention: the point of LongLoRA is that a model fine-tuned this way works with it.
Registered with transformers' AttentionInterface, like the plugin's own attention functions.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

S2_ATTENTION = "longmem_s2_attention"


def shift_half_heads(x: torch.Tensor, shift: int) -> torch.Tensor:
    """Roll the second half of the heads of [B, H, N, D] by `shift` positions along N."""
    half = x.shape[1] // 2
    return torch.cat([x[:, :half], x[:, half:].roll(shift, dims=2)], dim=1)


def s2_attention(query, key, value, group: int, scaling: float | None, dropout: float = 0.0) -> torch.Tensor:
    """[B, H, N, D] queries/keys/values (keys already repeated for GQA) -> [B, H, N, D] outputs."""
    batch, heads, length, dim = query.shape
    if length % group or length <= group:  # not a training-length sequence: plain causal attention
        return F.scaled_dot_product_attention(query, key, value, is_causal=True, scale=scaling, dropout_p=dropout)
    q, k, v = (
        shift_half_heads(t, -(group // 2)).reshape(batch, heads, length // group, group, dim)
        for t in (query, key, value)
    )
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scaling, dropout_p=dropout)
    return shift_half_heads(out.reshape(batch, heads, length, dim), group // 2)


def s2_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """transformers attention-function signature; the group size is set on the module. dropout comes
    before scaling, in transformers' order: kvpress, once imported, wraps every registered attention
    function and passes `dropout` as the sixth positional argument."""
    repeats = query.shape[1] // key.shape[1]
    key, value = (t.repeat_interleave(repeats, dim=1) for t in (key, value))
    out = s2_attention(query, key, value, module.s2_group_size, scaling, dropout if module.training else 0.0)
    return out.transpose(1, 2).contiguous(), None


def enable_s2_attention(model, group: int):
    """Switch every attention module of `model` to S2-Attn with groups of `group` tokens."""
    ALL_ATTENTION_FUNCTIONS.register(S2_ATTENTION, s2_attention_forward)
    ALL_MASK_ATTENTION_FUNCTIONS.register(S2_ATTENTION, sdpa_mask)
    modules = [m for m in model.modules() if hasattr(m, "q_proj") and hasattr(m, "layer_idx")]
    if not modules:
        raise ValueError(f"S2-attention: found no attention modules (with q_proj) in {type(model).__name__}.")
    for module in modules:
        module.s2_group_size = group
    model.set_attn_implementation(S2_ATTENTION)
    return model
