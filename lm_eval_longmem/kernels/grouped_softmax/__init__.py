"""Landmark Attention's grouped softmax: a readable reference, a vectorised PyTorch path and a
Triton row kernel (imported only when used); and the retrieval attention around it, which reads
each query's chosen blocks from a block store by index."""

from .block_bias import block_bias_grouped_softmax
from .dispatch import choose_backend, grouped_softmax
from .reference import reference_grouped_softmax
from .retrieval_attention import retrieval_attention

__all__ = [
    "block_bias_grouped_softmax",
    "choose_backend",
    "grouped_softmax",
    "reference_grouped_softmax",
    "retrieval_attention",
]
