"""Forgetting attention (FoX) and, more generally, causal attention with additive per-query and
per-key logit biases: a readable reference, a memory-bounded blocked PyTorch path and Triton
kernels (imported only when used)."""

from .dispatch import (
    biased_attention,
    choose_backend,
    cumulative_log_fgate,
    forgetting_attention,
    triton_unsupported_reason,
)
from .reference import reference_biased_attention

__all__ = [
    "biased_attention",
    "choose_backend",
    "cumulative_log_fgate",
    "forgetting_attention",
    "reference_biased_attention",
    "triton_unsupported_reason",
]
