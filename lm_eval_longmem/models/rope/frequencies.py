"""Inverse-frequency formulas of the controlled study (§3.2, eqs. 7-9, appendix 7.8).

RoPE rotates dimension pair j by angle i*theta_j with theta_j = b^(-2j/d); a method scales the
frequencies by a vector alpha (eq. 7). These are the formulas only, on plain tensors, so the
tests and the rope types in `rope_types.py` share one definition.
"""

from __future__ import annotations

import torch


def default_inv_freq(base: float, dim: int) -> torch.Tensor:
    """theta_j = b^(-2j/d), j = 0 .. d/2-1 (§3.1)."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float64) / dim)).to(torch.float32)


def ntk_kappa(factor: float, dim: int) -> float:
    """kappa = t^(d/(d-2)) (eq. 9): the lowest frequency then equals PI's, the highest is kept."""
    return float(factor) ** (dim / (dim - 2))


def ntk_inv_freq(base: float, dim: int, factor: float) -> torch.Tensor:
    """alpha_j = kappa^(-2j/d) (eq. 9), i.e. RoPE with base b*kappa."""
    return default_inv_freq(base * ntk_kappa(factor, dim), dim)


def dynamic_ntk_factor(s: float, length: int, training_length: int, original_length: int) -> float:
    """t -> s*max(C', C_test)/C - (s-1) (appendix 7.8, after Fu et al. 2024).

    C is the original (pretraining) length, C' the length the checkpoint was trained or
    extended to (C' = C for a frozen model) and C_test the length of the sequence at hand.
    Below C' the base is frozen at its value for C'; it grows only beyond C'."""
    return s * max(training_length, length) / original_length - (s - 1.0)
