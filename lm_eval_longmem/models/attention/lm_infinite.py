"""LM-Infinite (Han et al. 2023; controlled study §3.3) as a two-part attention rule.

A query attends to the first G tokens (global memory) and to the M most recent tokens (local
window, itself included); every other key is masked out. The relative position of a visible
key is min(n - m, C) with C the pretraining length. Part 0 holds the visible keys at distance
<= C (true rotation); part 1 those farther than C, scored with the query rotated to position C
and the key rotated back to position 0, which gives exactly distance C.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lm_eval_longmem.models.attention.band_attention import Band, GlobalKeys
from lm_eval_longmem.models.rope.rotation import rotate_by


def lm_infinite_distance(m: int, n: int, global_tokens: int, window: int, clamp: int) -> int | None:
    """The relative position query m sees for key n, or None when n is masked out."""
    if n > m or not (n < global_tokens or m - n < window):
        return None
    return min(m - n, clamp)


@dataclass(frozen=True)
class LMInfiniteRule:
    global_tokens: int  # G
    window: int  # M, local window (keys at distance < M)
    clamp: int  # C, largest relative position

    def forms(self, part, query, key, query_pos, key_pos, inv_freq):
        if part == 0:
            return query, key
        return rotate_by(query, self.clamp - query_pos, inv_freq), rotate_by(key, -key_pos, inv_freq)

    def key_ranges(self, part, first_query, end_query, key_pos):
        global_end = self.global_tokens + int((-key_pos[:, 0]).clamp(min=0).max())  # left padding shifts rows
        if part == 0:
            return [(0, global_end), (first_query - min(self.window - 1, self.clamp), end_query)]
        ranges = []
        if end_query - 1 > self.clamp:
            ranges.append((0, global_end))
        if self.window - 1 > self.clamp:
            ranges.append((first_query - (self.window - 1), end_query - 1 - self.clamp))
        return ranges

    def allowed(self, part, distance, key_pos) -> torch.Tensor:
        is_global = ((key_pos >= 0) & (key_pos < self.global_tokens))[:, None, None, :]
        visible = is_global | (distance < self.window)[None, None]
        near = (distance <= self.clamp)[None, None]
        return visible & (near if part == 0 else ~near)

    def pieces(self):
        """Part 0: every key within min(M - 1, C), and global keys up to C; part 1: every key
        between C and M - 1 (when the window exceeds C), and global keys beyond both."""
        local = min(self.window - 1, self.clamp)
        pieces = [Band(0, 0, local)]
        if local < self.clamp:
            pieces.append(GlobalKeys(0, self.global_tokens, local + 1, self.clamp))
        if self.window - 1 > self.clamp:
            pieces.append(Band(1, self.clamp + 1, self.window - 1))
        pieces.append(GlobalKeys(1, self.global_tokens, max(self.clamp, self.window - 1) + 1, None))
        return pieces
