"""Forgetting attention (FoX) and, more generally, causal attention with additive per-query and
per-key logit biases: a readable reference, a memory-bounded blocked PyTorch path and Triton
kernels (imported only when used).

Laid out by mode: ``reference.py`` (the formula, the tests' oracle), ``blocked.py`` (PyTorch,
bounded memory, the CPU path), ``parallel.py`` (the Triton forward and backward and their autograd
function), ``decoding.py`` (a few queries against many keys: split keys and their merge),
``block_configs.py`` (the Triton autotune candidates), ``common.py`` (argument checks and masks
every mode shares) and ``dispatch.py`` (the public functions, which pick a mode).
"""

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
