"""The study's dynamic NTK at run time: the base follows the length of the sequence at hand.

transformers' own `dynamic` type keeps the largest length it has ever seen (so a result
depends on what ran before) and re-scales in the middle of cached decoding (so new keys and
cached keys disagree). Here each sequence gets the base for its own length C_test, fixed when
the sequence starts (the forward whose positions begin at 0: a prompt, a scored input) and
kept while cached decoding continues it. Below the training length C' the base does not
change at all (appendix 7.8: t = s*max(C', C_test)/C - (s-1)).
"""

from __future__ import annotations

import types

import torch

from lm_eval_longmem.models.rope.rope_types import length_scaled_ntk_inv_freq


def install_length_scaled_update(rotary: torch.nn.Module, config, layer_type: str | None = None) -> None:
    """`layer_type`: the one layer type whose table follows the length (Gemma 3: the global layers',
    `full_attention_inv_freq`); None: the rotary embedding's single `inv_freq`."""
    buffer = f"{layer_type}_inv_freq" if layer_type else "inv_freq"
    if getattr(rotary, "_longmem_length_scaled", False):
        return
    original_forward = rotary.forward

    def forward(self, x, position_ids, *args, **kwargs):
        if int(position_ids.min()) == 0:  # a new sequence: rescale for its length
            length = int(position_ids.max()) + 1
            if length != self._longmem_length:
                table = getattr(self, buffer)
                with torch.device("cpu"):  # on the host on purpose: a few floats, one copy per new length
                    scaled = length_scaled_ntk_inv_freq(config, length, layer_type)
                table.copy_(scaled.to(table.device))
                self._longmem_length = length
        return original_forward(x, position_ids, *args, **kwargs)

    rotary._longmem_length = None
    rotary._longmem_length_scaled = True
    rotary.forward = types.MethodType(forward, rotary)
