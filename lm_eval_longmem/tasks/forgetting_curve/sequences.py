"""The paper's two token sequences, the positions it scores, and where spans are sampled.

copy: [bos] S [bos] S [eos]        LM: [bos] I [bos] S [eos]
With L = len(S), the second S occupies positions [L + 2, 2L + 2). The first half of it only
shows the model that it is copying; accuracy counts the argmax predictions of its last
ceil(L / 2) tokens (the reference code's `src[-length//2:]`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def copy_sequence(target: Sequence[int], bos: int, eos: int) -> list[int]:
    return [bos, *target, bos, *target, eos]


def lm_sequence(irrelevant: Sequence[int], target: Sequence[int], bos: int, eos: int) -> list[int]:
    if len(irrelevant) != len(target):
        raise ValueError("the irrelevant text must be as long as the copy target")
    return [bos, *irrelevant, bos, *target, eos]


def num_scored(length: int) -> int:
    """ceil(L / 2): how many target tokens are scored."""
    return (length + 1) // 2


def scored_range(length: int) -> tuple[int, int]:
    """[start, end) positions of the scored tokens in either sequence."""
    end = 2 * length + 2
    return end - num_scored(length), end


def input_tokens(length: int) -> int:
    """Tokens fed to the model for one sequence: up to the last scored token's predecessor.

    The final target token and [eos] are never inputs to a scored prediction (causality),
    so the forward pass takes 2L + 1 tokens of the 2L + 3-token sequence.
    """
    return scored_range(length)[1] - 1


def sample_spans(stream_length: int, length: int, samples: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """(target start, irrelevant start) pairs: uniform target, uniform non-overlapping irrelevant text.

    The irrelevant start is drawn uniformly from every position whose span does not overlap
    the target's: [0, s - L] on the left and [s + L, N - L] on the right.
    """
    last_start = stream_length - length
    if stream_length < 4 * length:
        raise ValueError(f"the corpus has {stream_length} tokens; length {length} needs at least {4 * length}")
    pairs = []
    for _ in range(samples):
        target = int(rng.integers(0, last_start + 1))
        left = max(0, target - length + 1)  # starts 0 .. target - L
        right = max(0, last_start - (target + length) + 1)  # starts target + L .. N - L
        k = int(rng.integers(0, left + right))
        irrelevant = k if k < left else target + length + (k - left)
        pairs.append((target, irrelevant))
    return pairs
