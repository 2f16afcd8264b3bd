"""Teacher-forced Landmark Attention one layer at a time: every window of a row in one pass per layer.

A window's attention at layer l reads only layer l's keys and values of its own tokens and of the
blocks of earlier windows, so the whole row can go through layer l before layer l + 1. Per layer:
one projection of all tokens, the block store made in one reshape, every window's block choice in
one batched call (`choose_for_all_windows`) and one retrieval attention over all windows
(`kernels/grouped_softmax/retrieval_attention.py`). The number of ops per row does not grow with
the number of windows. `sequence.LandmarkSequence` (window by window, and what generation uses)
is the reference this is tested against.

Positions: RoPE sees only differences, so every window is rotated as if it started at 0 (its
token i at i) instead of after its slot area; the distances are the window-by-window ones:

* window keys and queries: i - j, as there;
* a landmark of depth r (block ``n_w - 1 - r`` of the n_w blocks before window w) is scored at
  distance ``r B + i + 1`` while r < top_k, and every older block at ``top_k B + i + 1``
  (`slots.landmark_score_positions`: older blocks share one position, the last k keep theirs);
* a block in slot s, one of the last k_w blocks or not (``recent``), starts at distance
  ``(k_w + 1 - s - recent) B + i`` from the query (`slots.slot_steps`).

Stored keys are rotated by their offset in the block (as in `block_store.py`), so each of these is
the query rotated to ``m B + i`` for one m in 1..top_k + 1: the query is rotated to all of them
once and each use picks its m.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lm_eval_longmem.kernels.grouped_softmax import retrieval_attention
from lm_eval_longmem.models.landmark.grouped_query import grouped_matmul
from lm_eval_longmem.models.landmark.retrieval import Selection, top_blocks
from lm_eval_longmem.models.landmark.signed_rope import rotate_signed, signed_sin
from lm_eval_longmem.models.runtime.llama_decoder import Decoder, soft_cap


class LayerMajorLandmark:
    def __init__(
        self,
        decoder: Decoder,
        block_size: int,
        top_k: int,
        window: int,
        selection: Selection = "per_token_and_head",
        retrieval: bool = True,
    ):
        if window % block_size:
            raise ValueError(f"the window ({window}) must hold whole blocks of {block_size}")
        self.decoder = decoder
        self.block_size, self.top_k, self.window = block_size, top_k, window
        self.selection, self.retrieval = selection, retrieval
        self._tables = None

    @torch.no_grad()
    def hidden(self, ids: list[int]) -> torch.Tensor:
        """Final hidden states [len(ids), hidden] (after the final norm) of an augmented stream
        (landmarks in place), as `LandmarkSequence.feed` gives them window by window."""
        if not ids:
            raise ValueError("hidden needs at least one token")
        d = self.decoder
        x = d.embed(torch.tensor(ids, device=d.device))
        rows = _Rows(len(ids), self.window, self.block_size, self.top_k, d.device, retrieval=self.retrieval)
        tables = self._rope(x, rows)
        for layer in range(d.num_layers):
            q, k, v = d.project(layer, d.attention_input(layer, x))
            heads = self._attend(q, k, v, tables[layer], rows)
            x = d.mlp_block(layer, x + d.attention_output(layer, heads))
        return d.final_norm(x)

    def _rope(self, like: torch.Tensor, rows: _Rows):
        """Per layer: cos and signed sin at m B + i for every rotation m and window place i
        ([W, M, r]), and at the offsets 0..W-1 (window keys; the first B are the stored keys')."""
        if self._tables is None:
            B, W = self.block_size, self.window
            self._tables = [(cos, signed_sin(sin)) for cos, sin in self.decoder.rope((self.top_k + 1) * B + W, like)]
        places = rows.rotations[None, :] * self.block_size + torch.arange(self.window, device=like.device)[:, None]
        return [(cos[places], sin[places], cos[: self.window], sin[: self.window]) for cos, sin in self._tables]

    def _attend(self, q, k, v, table, rows: _Rows) -> torch.Tensor:
        d, B, W = self.decoder, self.block_size, self.window
        query_cos, query_sin, key_cos, key_sin = table
        heads, kv_heads, dim = q.shape[0], k.shape[0], q.shape[-1]
        q, k, v = (F.pad(t, (0, 0, 0, rows.padded - rows.length)) for t in (q, k, v))
        # every query at every rotation: [H, N, M, d] (M = 1 without retrieval: the window's own)
        at_every_rotation = q.view(heads, rows.windows, W, 1, dim).expand(-1, -1, -1, len(rows.rotations), -1)
        queries = rotate_signed(at_every_rotation, query_cos, query_sin).view(heads, rows.padded, -1, dim)
        keys = rotate_signed(k.view(kv_heads, rows.windows, W, dim), key_cos, key_sin).view(kv_heads, rows.padded, dim)
        # the store: each block's keys rotated by their offset in the block
        stored = rows.blocks * B
        store_keys = rotate_signed(k[:, :stored].view(kv_heads, rows.blocks, B, dim), key_cos[:B], key_sin[:B])
        store_values = v[:, :stored].view(kv_heads, rows.blocks, B, dim)
        if rows.blocks and self.retrieval:
            chosen, slot_valid, slot_rotation = self._choose(queries, store_keys, rows)
            slot_queries = queries.gather(2, slot_rotation[..., None].expand(-1, -1, -1, dim))
        else:
            chosen = torch.zeros(heads, rows.padded, 0, dtype=torch.long, device=q.device)
            slot_valid = chosen.bool()
            slot_queries = queries[:, :, :0]
        out = retrieval_attention(
            slot_queries,
            queries[:, :, 0],
            keys,
            v,
            store_keys,
            store_values,
            chosen,
            slot_valid,
            W,
            d.scaling,
            d.attn_softcap,
        )
        return out[:, : rows.length]

    def _choose(self, queries, store_keys, rows: _Rows):
        """Every window's block choice at once: chosen [H, N, top_k] (ascending), which slots hold a
        block, and the rotation m of each slot's query."""
        d, K = self.decoder, self.top_k
        heads = queries.shape[0]
        landmarks = store_keys[:, :, -1]  # [Hkv, n, d], rotated by B - 1
        # every block at the older blocks' shared distance, then the last top_k of each window's at their own
        scores = grouped_matmul(queries[:, :, K + 1], landmarks.transpose(1, 2))  # [H, N, n]
        recent_keys = landmarks[:, rows.recent_blocks.clamp(min=0)]  # [Hkv, windows, K, d]
        by_window = queries[:, :, 1 : K + 1].unflatten(1, (rows.windows, self.window))  # [H, windows, W, K, d]
        by_kv_head = by_window.unflatten(0, (landmarks.shape[0], -1))  # [Hkv, G, windows, W, K, d]
        recent = (by_kv_head * recent_keys[:, None, :, None]).sum(-1)  # [Hkv, G, windows, W, K]
        columns = rows.recent_columns.expand(heads, -1, -1)  # [H, N, K], hidden ones to a spare column
        scores = F.pad(scores, (0, 1)).scatter(-1, columns, recent.reshape(heads, rows.padded, K))[..., :-1]
        scores = soft_cap(scores * d.scaling, d.attn_softcap).float()
        if self.selection == "max_over_tokens":
            probs = scores.masked_fill(~rows.visible, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
            scores = probs.unflatten(1, (rows.windows, self.window)).cummax(dim=2).values.flatten(1, 2)
        chosen = top_blocks(scores, min(K, rows.blocks), rows.visible)  # fewer slots when fewer blocks exist
        slots = torch.arange(chosen.shape[-1], device=chosen.device)
        slot_valid = slots < rows.retrieved[:, None]  # [N, K]
        recent_block = chosen >= (rows.visible_blocks - rows.retrieved)[:, None]
        rotation = (rows.retrieved[:, None] + 1 - slots - recent_block.long()).clamp(1, K + 1)
        return chosen, slot_valid.expand(heads, -1, -1), rotation


class _Rows:
    """What each window of one row sees, made once per row and shared by every layer (all on the
    device, so no layer reads anything back)."""

    def __init__(self, length: int, window: int, block_size: int, top_k: int, device, retrieval: bool):
        self.length = length
        self.windows = -(-length // window)
        self.padded = self.windows * window
        per_window = window // block_size
        self.blocks = (self.windows - 1) * per_window  # blocks of windows that a later window reads
        use = retrieval and self.blocks > 0
        self.rotations = torch.arange(top_k + 2 if use else 1, device=device)  # m of m B + i
        if not use:
            return
        n_w = torch.arange(self.windows, device=device) * per_window  # blocks before each window
        self.visible_blocks = n_w[:, None].expand(-1, window).reshape(-1)  # [N]
        self.visible = torch.arange(self.blocks, device=device) < self.visible_blocks[:, None]  # [N, n]
        self.retrieved = self.visible_blocks.clamp(max=top_k)  # k_w per query
        depth = torch.arange(top_k, device=device)
        self.recent_blocks = n_w[:, None] - 1 - depth  # [windows, K], negative where there is none
        columns = torch.where(self.recent_blocks >= 0, self.recent_blocks, self.blocks)
        self.recent_columns = columns[:, None].expand(-1, window, -1).reshape(1, self.padded, top_k)
