"""FoX's forget gate: its parameters, their initialisation and `log f_t` per head.

The parameters sit directly on the attention module, as in the official code
(`attn.fgate_proj` for the data-dependent gate, `attn.fgate_bias` for the others):

* ``full``: `f_t = sigmoid(fgate_proj(x_t))`, a Linear(hidden, heads) with bias (bias init 0).
* ``bias_only``: `f = sigmoid(fgate_bias)`, a trainable per-head bias, the same for every token.
* ``fixed``: the same, but `fgate_bias` is a non-trainable buffer.
* ``none``: no gate (`log f = 0`): plain causal softmax attention.

With `fgate_bias_init` (paper, appendix D) head h's bias is `-log(expm1(1 / T_h))`, `T_h`
log-spaced over [decay_time_min, decay_time_max]: then `-1 / log(sigmoid(b_h)) = T_h`, i.e. head h
forgets with time constant T_h tokens.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def decay_time_bias(num_heads: int, decay_time_min: float, decay_time_max: float) -> torch.Tensor:
    """Per-head gate biases whose decay time constants are log-spaced in [min, max]."""
    decay_time = torch.exp(torch.linspace(math.log(decay_time_min), math.log(decay_time_max), steps=num_heads))
    return -torch.log(torch.expm1(1.0 / decay_time))


def initial_fgate_bias(config) -> torch.Tensor:
    """The value `fgate_bias` starts from (bias_only / fixed gates)."""
    if config.fgate_bias_init:
        return decay_time_bias(config.num_heads, config.decay_time_min, config.decay_time_max)
    return torch.zeros(config.num_heads)


def add_forget_gate(module: nn.Module, config) -> None:
    """Register the gate parameters of `config.fgate_type` on the attention `module`."""
    if config.fgate_type == "full":
        module.fgate_proj = nn.Linear(config.hidden_size, config.num_heads, bias=True)
    elif config.fgate_type == "bias_only":
        module.fgate_bias = nn.Parameter(initial_fgate_bias(config))
        module.fgate_bias._no_weight_decay = True
    elif config.fgate_type == "fixed":
        module.register_buffer("fgate_bias", initial_fgate_bias(config))


def log_forget_gate(module: nn.Module, fgate_type: str, hidden_states: torch.Tensor) -> torch.Tensor:
    """`log f` as `[B, T, heads]` fp32 for the tokens `hidden_states [B, T, hidden]`."""
    batch, length = hidden_states.shape[:2]
    if fgate_type == "full":
        return F.logsigmoid(module.fgate_proj(hidden_states).float())
    if fgate_type == "none":
        return hidden_states.new_zeros(batch, length, module.num_heads, dtype=torch.float32)
    per_head = F.logsigmoid(module.fgate_bias.float())
    return per_head.expand(batch, length, -1)
