"""One augmented token stream through Landmark Attention: windows of W tokens, a block store per layer.

Per layer and window (official `llama/llama_mem.py`, inference path): the window's queries attend
with one grouped softmax over [top-k retrieved blocks | the window so far], causal inside the
window; each query token and head picks its own blocks (`retrieval.py`) and they sit in the slots
of `slots.py`. When the window is full its keys and values (landmarks included) join the store,
the keys rotated only by their offset inside their block. The model's own modules do everything
else (`runtime/llama_decoder.Decoder`).

Tokens can be fed in any pieces (a window, a prompt, one token): a piece never crosses a window's
end, so decoding token by token is exactly teacher forcing on the augmented stream. The official
decoding instead reads every completed block from the store and keeps only the unfinished block
locally; ours keeps the current window local in decoding as in scoring, which reads the same
blocks at the same distances and makes generation and scoring one computation.

With `retrieval=False` the store is never read: each window attends to itself alone (the ablation
that shows what retrieval adds).
"""

from __future__ import annotations

import torch

from lm_eval_longmem.kernels.grouped_softmax import grouped_softmax
from lm_eval_longmem.models.landmark.block_store import BlockStore
from lm_eval_longmem.models.landmark.retrieval import BlockChooser, Selection
from lm_eval_longmem.models.landmark.slots import chosen_block_starts, landmark_score_positions, slot_origin
from lm_eval_longmem.models.runtime.llama_decoder import Decoder, rotate, soft_cap

# Retrieved keys and values are gathered per query and head ([H, c, k, B, d] each), so a window's
# queries go through in pieces (results do not depend on the piece size). On a GPU, fewer and
# larger pieces mean fewer kernel launches: pieces fill GATHER_BUDGET_BYTES. On the CPU, 64
# queries per piece was the fastest of 16, 32, 64 and 128 (a 2-layer Llama, hidden 256, 8/2
# heads, B 64, k 5, windows of 128: 2.9, 3.0, 2.8 and 4.2 s for 2,080 tokens): larger gathers
# fall out of the caches.
GATHER_BUDGET_BYTES = 256 * 2**20
CPU_QUERIES_PER_PASS = 64
MIN_QUERIES_PER_PASS = 16


def queries_per_pass(decoder: Decoder, block_size: int, top_k: int, window: int) -> int:
    """How many of a window's queries go through in one piece on the decoder's device."""
    if decoder.device.type == "cpu":
        return min(window, CPU_QUERIES_PER_PASS)
    itemsize = torch.empty((), dtype=decoder.dtype).element_size()
    per_query = 2 * decoder.num_heads * top_k * block_size * decoder.head_dim * itemsize
    return max(MIN_QUERIES_PER_PASS, min(window, GATHER_BUDGET_BYTES // per_query))


class LandmarkSequence:
    def __init__(
        self,
        decoder: Decoder,
        block_size: int,
        top_k: int,
        window: int,
        selection: Selection = "per_token_and_head",
        retrieval: bool = True,
        pass_size: int | None = 0,
    ):
        if window % block_size:
            raise ValueError(f"the window ({window}) must hold whole blocks of {block_size}")
        self.decoder = decoder
        self.block_size, self.top_k, self.window, self.retrieval = block_size, top_k, window, retrieval
        # 0: sized by queries_per_pass; None: a window in one pass (training, no retrieval)
        automatic = pass_size == 0
        self.pass_size = queries_per_pass(decoder, block_size, top_k, window) if automatic else pass_size or window
        d = decoder
        self.stores = [
            BlockStore(d.num_kv_heads, block_size, d.head_dim, d.dtype, d.device) for _ in range(d.num_layers)
        ]
        self.choosers = [BlockChooser(selection) for _ in range(d.num_layers)]
        self.local = self._empty_window()
        self.tokens_seen = 0
        self._tables = None
        self.last_chosen: list[torch.Tensor | None] = [None] * d.num_layers  # per layer [H, c, k], for inspection

    @property
    def window_fill(self) -> int:
        return self.local[0][0].shape[1]

    @property
    def num_blocks(self) -> int:
        return self.stores[0].num_blocks

    def store_bytes(self) -> int:
        return sum(store.nbytes() for store in self.stores)

    def feed(self, ids: list[int]) -> torch.Tensor:
        """Final hidden states [len(ids), hidden] (after the final norm) of the next augmented tokens."""
        if not ids:
            raise ValueError("feed needs at least one token")
        pieces, start = [], 0
        while start < len(ids):
            stop = start + min(len(ids) - start, self.window - self.window_fill, self.pass_size)
            pieces.append(self._forward(ids[start:stop]))
            start = stop
            if self.window_fill == self.window:
                self._fold()
        return pieces[0] if len(pieces) == 1 else torch.cat(pieces)

    # --- the loop ----------------------------------------------------------------------------
    def _empty_window(self):
        d = self.decoder
        empty = torch.empty(d.num_kv_heads, 0, d.head_dim, dtype=d.dtype, device=d.device)
        return [(empty, empty) for _ in range(d.num_layers)]

    def _rope(self, like: torch.Tensor):
        if self._tables is None:
            self._tables = self.decoder.rope((self.top_k + 1) * self.block_size + self.window, like)
        return self._tables

    def _forward(self, ids: list[int]) -> torch.Tensor:
        d = self.decoder
        x = d.embed(torch.tensor(ids, device=d.device))
        tables = self._rope(x)
        for layer in range(d.num_layers):
            q, k, v = d.project(layer, d.attention_input(layer, x))
            window_k, window_v = self.local[layer]
            window_k, window_v = torch.cat([window_k, k], dim=1), torch.cat([window_v, v], dim=1)
            heads = self._attend(layer, q, window_k, window_v, *tables[layer])
            x = d.mlp_block(layer, x + d.attention_output(layer, heads))
            self.local[layer] = (window_k, window_v)
        self.tokens_seen += len(ids)
        return d.final_norm(x)

    def _attend(self, layer, q, window_k, window_v, cos, sin) -> torch.Tensor:
        """Attention output [H, c, d] of the piece's queries q [H, c, d] (pre-RoPE)."""
        d, B = self.decoder, self.block_size
        c, seen = q.shape[1], window_k.shape[1]
        group = q.shape[0] // window_k.shape[0]
        store = self.stores[layer]
        n = store.num_blocks
        k = min(self.top_k, n) if self.retrieval else 0
        # Window tokens follow the slot area, whose (k + 1) blocks end where the window starts.
        base = (k + 1) * B if k else 0
        offset = slot_origin(n, self.top_k, B) if k else n * B
        queries = rotate(q, cos[base + seen - c : base + seen], sin[base + seen - c : base + seen])
        keys = rotate(window_k, cos[base : base + seen], sin[base : base + seen]).repeat_interleave(group, dim=0)
        scores = queries @ keys.transpose(1, 2)
        if k:
            # Stored keys are already rotated by their offset in the block (block_store.py), so a
            # key scored at position s = start + r needs only the rotation by its block's start.
            landmark_at = landmark_score_positions(n, self.top_k, B, q.device) - offset - (B - 1)
            landmarks = rotate(store.landmark_keys(), cos[landmark_at], sin[landmark_at])
            landmark_scores = queries @ landmarks.repeat_interleave(group, dim=0).transpose(1, 2)
            chosen = self.choosers[layer].choose(soft_cap(landmark_scores * d.scaling, d.attn_softcap), k)
            self.last_chosen[layer] = chosen
            block_keys, block_values = store.gather(chosen, group)  # [H, c, k, B, d]
            # q . R(start) k' = (R(-start) q) . k': one rotation per query and chosen block, instead
            # of one per retrieved key ([H, c, k, d] against [H, c, k, B, d]).
            start = chosen_block_starts(chosen, n, self.top_k, B) - offset
            queries_at_slots = rotate(queries[:, :, None].expand(-1, -1, k, -1), cos[start], -sin[start])
            retrieved = torch.einsum("hckd,hckbd->hckb", queries_at_slots, block_keys).flatten(2)
            scores = torch.cat([retrieved, scores], dim=-1)
        weights = grouped_softmax(soft_cap(scores.float() * d.scaling, d.attn_softcap), B).to(q.dtype)
        out = weights[..., k * B :] @ window_v.repeat_interleave(group, dim=0)
        if k:
            out = out + torch.einsum("hckb,hckbd->hcd", weights[..., : k * B].unflatten(-1, (k, B)), block_values)
        return out

    def _fold(self) -> None:
        """The full window's blocks join the store; the next window starts empty."""
        for store, chooser, (keys, values), (cos, sin) in zip(self.stores, self.choosers, self.local, self._tables):
            store.append(keys, values, cos[: self.block_size], sin[: self.block_size])
            chooser.reset()
        self.local = self._empty_window()
