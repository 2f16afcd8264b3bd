"""Landmark Attention's grouped softmax: a readable reference, a vectorised PyTorch path and a
Triton row kernel (imported only when used)."""

from .block_bias import block_bias_grouped_softmax
from .dispatch import choose_backend, grouped_softmax
from .reference import reference_grouped_softmax

__all__ = ["block_bias_grouped_softmax", "choose_backend", "grouped_softmax", "reference_grouped_softmax"]
