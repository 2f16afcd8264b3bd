"""Self-Extend (Jin et al. 2024; controlled study §3.3, eq. 13) as a two-part attention rule.

Part 0, neighbour attention: keys at distance d <= M (the neighbour window) keep their true
relative position. Part 1, grouped attention: farther keys (d > M) use grouped positions,
queries at floor(m/N) + M - floor(M/N) and keys at floor(n/N), so their relative position is
M + floor(m/N) - floor(n/N) - floor(M/N). Eq. 13 writes this distance as
M + floor((m-n)/N) - floor(M/N); the grouped positions are how Self-Extend realizes it with
RoPE (a rotation can only depend on each side's own position): the two agree whenever
m mod N >= n mod N and differ by one otherwise. Distances then stay below the training
length C for inputs up to (C - M) * N + M tokens (the paper's maximum extended length).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lm_eval_longmem.models.attention.band_attention import Band
from lm_eval_longmem.models.rope.rotation import rotate_by


def grouped_query_position(m, window: int, group: int):
    return m // group + window - window // group


def grouped_key_position(n, group: int):
    return n // group


def self_extend_distance(m: int, n: int, window: int, group: int) -> int:
    """The relative position query m sees for key n (n <= m)."""
    if m - n <= window:
        return m - n
    return grouped_query_position(m, window, group) - grouped_key_position(n, group)


@dataclass(frozen=True)
class SelfExtendRule:
    window: int  # M, neighbour window
    group: int  # N, group size

    def forms(self, part, query, key, query_pos, key_pos, inv_freq):
        if part == 0:
            return query, key
        query_shift = grouped_query_position(query_pos, self.window, self.group) - query_pos
        key_shift = grouped_key_position(key_pos, self.group) - key_pos
        return rotate_by(query, query_shift, inv_freq), rotate_by(key, key_shift, inv_freq)

    def key_ranges(self, part, first_query, end_query, key_pos):
        if part == 0:
            return [(first_query - self.window, end_query)]
        return [(0, end_query - 1 - self.window)]

    def allowed(self, part, distance, key_pos) -> torch.Tensor:
        near = distance <= self.window
        return (near if part == 0 else ~near)[None, None]

    def pieces(self):
        return [Band(0, 0, self.window), Band(1, self.window + 1, None)]
