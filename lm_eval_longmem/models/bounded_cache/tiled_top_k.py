"""Each query's `k` best keys by q.k, scored in tiles whose scores stay in cache.

LongCache's recall (recall.py, chunk_recall.py) scores every query of a chunk against the whole
middle: at 16k tokens and 4 heads that is a float32 [heads, 512, 14k] matrix per chunk, written
out and read again by `topk`. On a CPU that round trip through memory, not the arithmetic, set
the recall's pace (a 2-core EPYC: 84 ms per such chunk whole, 41 ms in tiles of 256 queries x
2,048 keys). So the keys go in tiles and the queries in runs that keep one tile's scores under a
device's budget; each tile keeps its own top k, and one more `topk` over the tiles' candidates
gives the row's: a key among a row's k best is among its tile's k best, so the picks are the
same keys. A GPU has the bandwidth to write the scores out, so its budget is large and a chunk
is one tile: few launches.

Ties are common, not a corner case: at the first layer a repeated token's pre-RoPE keys are
identical, so every query scores its copies equally. On a CPU the picks among equal scores are
the earlier keys, whatever the tiling: a row of at least 64 k scores goes through `topk`, which
there keeps the earlier of equal scores (ATen's partial sort; tests/models/test_tiled_top_k.py
holds it), a shorter one through a stable sort, and the tiles' candidates are merged in key
order by a stable sort. On a GPU `topk` leaves ties unspecified.
"""

from __future__ import annotations

import torch

GPU_SCORE_BYTES = 256 * 2**20  # float32 scores one tile (or one group of chunks) may hold on a GPU
CPU_SCORE_BYTES = 8 * 2**20  # ... on a CPU: a tile that stays in its cache
KEY_TILE = 2048  # keys a tile takes at least when the whole row does not fit


def score_bytes(device: torch.device) -> int:
    """How many bytes of float32 scores to hold at once on `device`."""
    return GPU_SCORE_BYTES if device.type == "cuda" else CPU_SCORE_BYTES


def top_keys(queries: torch.Tensor, keys: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(scores, key indices) [H, R, min(k, W)] of each query's k best keys, float32, best first.

    queries [H, R, d]; keys [H, W, d] (already one per query head)."""
    heads, rows, _ = queries.shape
    width = keys.shape[1]
    k = min(k, width)
    budget = score_bytes(queries.device)
    queries, keys_t = queries.float(), keys.float().transpose(1, 2)
    if 4 * heads * rows * width <= budget:  # one tile: the whole matrix
        return best_of(queries @ keys_t, k)
    key_tile = max(KEY_TILE, budget // (4 * heads * rows))  # all rows in one run where the budget allows
    row_run = max(1, min(rows, budget // (4 * heads * key_tile)))
    values, indices = [], []
    for first_row in range(0, rows, row_run):
        run = queries[:, first_row : first_row + row_run]
        run_values, run_indices = [], []
        for first_key in range(0, width, key_tile):
            scores = run @ keys_t[:, :, first_key : first_key + key_tile]
            value, index = best_of(scores, min(k, scores.shape[-1]))
            run_values.append(value)
            run_indices.append(index + first_key)
        values.append(torch.cat(run_values, dim=-1))
        indices.append(torch.cat(run_indices, dim=-1))
    candidates, candidate_keys = torch.cat(values, dim=1), torch.cat(indices, dim=1)  # [H, R, tiles x k]
    in_key_order = candidate_keys.argsort(dim=-1)  # a tile's picks come best first, not in key order
    candidates, candidate_keys = candidates.gather(-1, in_key_order), candidate_keys.gather(-1, in_key_order)
    value, position = candidates.sort(dim=-1, descending=True, stable=True)  # equal scores: the earlier key
    return value[..., :k], candidate_keys.gather(-1, position[..., :k])


def best_of(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(values, indices) of the k largest of each row of `scores`, best first; on a CPU the earlier
    of equal scores (see the module's docstring)."""
    if scores.is_cuda or scores.shape[-1] >= 64 * k:
        return scores.topk(k, dim=-1)
    value, index = scores.sort(dim=-1, descending=True, stable=True)
    return value[..., :k], index[..., :k]
