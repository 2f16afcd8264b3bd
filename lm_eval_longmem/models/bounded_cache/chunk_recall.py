"""LongCache's recall (bounded_cache/recall.py) for every chunk of a row at once, as fixed slot lists.

The chunk runner recalls, per chunk, the union of the spans around the `top_k_prime` most picked
middle keys, and reads back how many tokens that is (`nonzero`): a host read per layer and chunk.
Here every chunk gets the same number of slots, top_k_prime x span_size (one per span token, as
the spans are laid out), sorted by token; a slot repeating the token before it (spans that
overlap, meet the middle's edge, or share a centre) is marked invalid, so the valid slots are
exactly the recalled tokens in order and a slot's window position is S + its rank among them. The
picks are the chunk runner's: each chunk's queries score the middle before it (keys past it are
masked to -inf, and picks of them, or of the padding after the row, are not counted), and the
ranking (count, then best score, then the earlier key) runs over the same candidates.

Where the picks come from (`kernels/top_keys`): on a GPU with Triton, one kernel launch per layer
for every recalling chunk (each query's running best keys kept in registers, the scores never
written out); on a CPU, the scan: ATen's q.k in cached tiles, each ranked into every query's
running best keys by a small C function; elsewhere (or where no C compiler builds the scan) the
chunks are scored in groups whose scores fit a budget, each group's keys in cache-sized tiles on
a CPU (`tiled_top_k.py`). All pick the same keys, the earlier of equal scores included.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from lm_eval_longmem.kernels.top_keys import top_keys_path
from lm_eval_longmem.models.bounded_cache.chunk_windows import ChunkWindows
from lm_eval_longmem.models.bounded_cache.recall import recall_centres
from lm_eval_longmem.models.bounded_cache.tiled_top_k import best_of, score_bytes, top_keys


@dataclass(frozen=True)
class RecalledSpans:
    """The slot picker of `LayerMajorSequence` for LongCache's arguments."""

    budget: int  # chunks that start with more than this many tokens stored recall
    top_k: int
    top_k_prime: int
    span_size: int
    backend: str = (
        "auto"  # "triton": the kernel (CUDA, or the Triton interpreter); "scan": the CPU scan; "torch": the groups
    )

    def __call__(self, queries: torch.Tensor, keys: torch.Tensor, windows: ChunkWindows):
        """(tokens, valid) [n, top_k_prime * span_size], or None when no chunk recalls (the middle
        tokens themselves are the slots)."""
        recalling = [j for j, s in enumerate(windows.host_starts) if s > self.budget]
        if not recalling or self.top_k_prime <= 0:
            return None
        first = recalling[0]
        direct_tokens, direct_valid = windows.direct_slots()
        if self.top_k <= 0:  # no key is picked: the recalling chunks recall nothing
            return direct_tokens, direct_valid & (torch.arange(windows.num_chunks, device=keys.device) < first)[:, None]
        c = windows.shape.chunk
        middle = windows.middle_length[first:]  # [n'] tokens of each recalling chunk's middle
        widest = windows.host_middle_lengths[-1]
        chunk_queries = F.pad(queries, (0, 0, 0, windows.padding)).unflatten(1, (-1, c))[:, first:].float()
        middle_keys = keys[:, windows.shape.sinks : windows.shape.sinks + widest].float()  # [Hkv, widest, d]
        path = top_keys_path(self.backend, keys)
        if path in ("triton", "scan"):
            if path == "triton":
                from lm_eval_longmem.kernels.top_keys.triton_top_keys import triton_top_keys as one_pass
            else:
                from lm_eval_longmem.kernels.top_keys.scan_top_keys import scan_top_keys as one_pass

            visible = middle.repeat_interleave(c)  # each query sees its chunk's middle
            value, index = one_pass(chunk_queries.flatten(1, 2), middle_keys, visible, self.top_k)
            value, index = value.unflatten(1, (-1, c)), index.unflatten(1, (-1, c))  # [H, n', c, k]
        else:
            value, index = self._picks_in_groups(chunk_queries, middle_keys, middle, windows, recalling)
        # a pick counts when it is a key of the chunk's middle, by a query of the row
        counted = torch.isfinite(value) & windows.real_query[None, first:, :, None]
        index, value, counted = (t.transpose(0, 1).flatten(1) for t in (index, value, counted))  # [n', H c k]
        counts = torch.zeros(len(recalling), widest, dtype=torch.long, device=keys.device)
        counts.scatter_add_(1, index, counted.long())
        best = torch.full((len(recalling), widest), float("-inf"), dtype=torch.float32, device=keys.device)
        best.scatter_reduce_(1, index, value.masked_fill(~counted, float("-inf")), "amax")
        centres = recall_centres(counts, best, self.top_k_prime)  # [n', k']
        offsets = torch.arange(self.span_size, device=keys.device) - self.span_size // 2
        tokens = centres[:, :, None] + offsets  # [n', k', span]
        tokens = torch.minimum(tokens.clamp(min=0), (middle - 1).clamp(min=0)[:, None, None]).flatten(1)
        tokens = tokens.sort(dim=1).values
        valid = torch.ones_like(tokens, dtype=torch.bool)
        valid[:, 1:] = tokens[:, 1:] != tokens[:, :-1]
        return (
            torch.cat([direct_tokens[:first], windows.shape.sinks + tokens]),
            torch.cat([direct_valid[:first], valid]),
        )

    def _picks_in_groups(self, chunk_queries, middle_keys, middle, windows: ChunkWindows, recalling: list[int]):
        """(scores, keys) [H, n', c, top_k] of every recalling chunk, scored in groups of chunks whose
        scores fit the device's budget; slots past a middle shorter than top_k are (-inf, 0)."""
        H, _, c, _ = chunk_queries.shape
        middle_keys = middle_keys.repeat_interleave(H // middle_keys.shape[0], dim=0)
        widest = middle_keys.shape[1]
        group = max(1, score_bytes(middle_keys.device) // (4 * H * c * widest))
        values, indices = [], []
        for start in range(0, len(recalling), group):
            stop = min(start + group, len(recalling))
            # the group's keys: up to the middle of its last chunk (a triangle, not the whole rectangle)
            width = windows.host_middle_lengths[recalling[stop - 1]]
            if stop - start == 1:  # its own middle is the width: nothing to mask, and the keys may go in tiles
                value, index = top_keys(chunk_queries[:, start], middle_keys[:, :width], self.top_k)
                value, index = value[:, None], index[:, None]  # [H, 1, c, k]
            else:
                value, index = self._group_picks(
                    chunk_queries[:, start:stop],
                    middle_keys[:, :width],
                    middle[start:stop],
                    windows.host_middle_lengths[recalling[start]],
                )
            missing = self.top_k - value.shape[-1]  # a middle narrower than top_k
            values.append(F.pad(value, (0, missing), value=float("-inf")))
            indices.append(F.pad(index, (0, missing)))
        return torch.cat(values, dim=1), torch.cat(indices, dim=1)

    def _group_picks(self, queries, keys, middle, lowest_middle: int):
        """(scores, keys) [H, g, c, k] of a group of chunks scored as one matrix (it fits the budget):
        queries [H, g, c, d] against keys [H, width, d], the width of the group's last middle."""
        H, g, c, d = queries.shape
        width = keys.shape[1]
        scores = (queries.reshape(H, g * c, d) @ keys.transpose(1, 2)).view(H, g, c, width)  # one matmul per head
        # a key past a chunk's own middle (`middle` [g]) is masked; only columns past the group's first
        # middle can be, so only those are rewritten
        if lowest_middle < width:
            columns = torch.arange(lowest_middle, width, device=keys.device)
            outside = columns[None] >= middle[:, None]  # [g, width - lowest_middle]
            scores[..., lowest_middle:].masked_fill_(outside[None, :, None, :], float("-inf"))
        return best_of(scores, min(self.top_k, width))
