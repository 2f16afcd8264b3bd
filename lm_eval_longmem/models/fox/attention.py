"""Forgetting attention layer (official `ForgettingAttentionLayer`, same parameter names).

Per token: `q = q_proj(x)`, `k`/`v` from `k_proj`/`v_proj` (a `ShiftLinear` with KV-shift),
QK-norm, RoPE (baselines only), `log f` from the forget gate, then causal attention with logits
`q_i.k_j / sqrt(d) + c_i - c_j` (`c = cumsum(log f)` in fp32), then the output gate/norm and
`o_proj`. Every call (training, prefill, chunked prefill, one-token decode) goes through the same
`biased_attention` kernel with the cached keys and `c` prepended.

QK-norm: with `qk_norm_share_param_across_head` (the released checkpoints) `q_norm`/`k_norm`
are RMS norms over head_dim whose `head_dim` scales all heads share; otherwise one scale per
channel. Both use eps 1e-5 (the official modules' default), not `norm_eps`; the output norm uses
`norm_eps`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from lm_eval_longmem.kernels.forgetting_attention import biased_attention, cumulative_log_fgate

from .cache_fox import ForgettingAttentionCacheLayer
from .forget_gate import add_forget_gate, log_forget_gate
from .norms import HeadwiseRMSNorm, RMSNorm
from .rotary import apply_rotary
from .shift import ShiftLinear

QK_NORM_EPS = 1e-5


def project(proj: nn.Module, x: torch.Tensor, previous_raw, padding) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Apply a key/value projection; with KV-shift also return its pre-shift output."""
    if isinstance(proj, ShiftLinear):
        return proj(x, previous_raw, padding)
    return proj(x), None


class ForgettingAttentionLayer(nn.Module):
    def __init__(self, config, layer_idx: int):
        super().__init__()
        hidden, heads = config.hidden_size, config.num_heads
        self.layer_idx = layer_idx
        self.num_heads = heads
        self.head_dim = hidden // heads
        self.fgate_type = config.fgate_type
        self.use_rope = config.use_rope
        self.rope_base = config.rope_base
        self.ogate_act = config.ogate_act
        self.qk_norm_shared_scale = config.qk_norm and config.qk_norm_share_param_across_head

        def key_value_projection(shifted: bool) -> nn.Module:
            if shifted:
                return ShiftLinear(hidden, hidden, heads, bias=False)
            return nn.Linear(hidden, hidden, bias=False)

        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = key_value_projection(config.use_k_shift)
        self.v_proj = key_value_projection(config.use_v_shift)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)
        add_forget_gate(self, config)
        self.ogate_proj = nn.Linear(hidden, hidden, bias=False) if config.use_output_gate else None
        self.output_norm = HeadwiseRMSNorm(heads, hidden, eps=config.norm_eps) if config.use_output_norm else None
        if self.qk_norm_shared_scale:
            self.q_norm, self.k_norm = RMSNorm(self.head_dim, QK_NORM_EPS), RMSNorm(self.head_dim, QK_NORM_EPS)
        elif config.qk_norm:
            self.q_norm = HeadwiseRMSNorm(heads, hidden, QK_NORM_EPS)
            self.k_norm = HeadwiseRMSNorm(heads, hidden, QK_NORM_EPS)
        else:
            self.q_norm = self.k_norm = None

    def forward(
        self,
        hidden_states: torch.Tensor,
        cache_layer: ForgettingAttentionCacheLayer | None = None,
        seq_start: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """hidden_states `[B, T, hidden]` (already normed). seq_start `[B]`: left padding, counted
        over cached + new tokens. positions `[B, T]`: RoPE positions (baselines only)."""
        batch, length, _ = hidden_states.shape
        past = 0 if cache_layer is None else cache_layer.get_seq_length()
        padding = None
        if seq_start is not None:
            token_index = torch.arange(past, past + length, device=hidden_states.device)
            padding = token_index[None, :] < seq_start[:, None]
        previous_key, previous_value = (None, None) if cache_layer is None else cache_layer.last_inputs()

        q = self.q_proj(hidden_states)
        k, key_inputs = project(self.k_proj, hidden_states, previous_key, padding)
        v, value_inputs = project(self.v_proj, hidden_states, previous_value, padding)
        q, k, v = self._normalize_queries_keys(q, k, v)
        if self.use_rope:
            q = apply_rotary(q, positions, self.rope_base)
            k = apply_rotary(k, positions, self.rope_base)

        log_fgate = log_forget_gate(self, self.fgate_type, hidden_states)
        chunk_start = None if seq_start is None else (seq_start - past).clamp(min=0)
        cum_log_fgate = cumulative_log_fgate(log_fgate, seq_start=chunk_start)
        if cache_layer is not None:
            offset = cache_layer.last_cum_log_fgate()
            if offset is not None:
                cum_log_fgate = cum_log_fgate + offset
            k, v, all_cum = cache_layer.update(k, v, cum_log_fgate, key_inputs, value_inputs)
        else:
            all_cum = cum_log_fgate

        out = biased_attention(
            q, k, v, all_cum[:, -length:], all_cum, scale=1.0 / math.sqrt(self.head_dim), seq_start=seq_start
        )
        return self._output(out.reshape(batch, length, -1), hidden_states)

    def _normalize_queries_keys(self, q, k, v):
        """QK-norm, then split heads: `[B, T, hidden]` -> `[B, T, H, D]`."""
        if self.q_norm is not None and not self.qk_norm_shared_scale:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k, v = (t.unflatten(-1, (self.num_heads, self.head_dim)) for t in (q, k, v))
        if self.qk_norm_shared_scale:
            q, k = self.q_norm(q), self.k_norm(k)
        return q, k, v

    def _output(self, attended: torch.Tensor, hidden_states: torch.Tensor) -> torch.Tensor:
        """Output gate and norm, then `o_proj` (official: fused norm+gate, or a GLU before o_proj)."""
        gate = None if self.ogate_proj is None else self.ogate_proj(hidden_states)
        if self.output_norm is not None:
            attended = self.output_norm(attended, gate)
        elif gate is not None:
            activation = torch.sigmoid if self.ogate_act == "sigmoid" else F.silu
            attended = (activation(gate.float()) * attended.float()).to(gate.dtype)
        return self.o_proj(attended)
