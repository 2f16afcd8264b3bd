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

from typing import NamedTuple

import torch

from lm_eval_longmem.kernels.grouped_softmax import grouped_softmax, retrieval_cpu
from lm_eval_longmem.kernels.grouped_softmax.retrieval_cpu import cpu_retrieval_attention, cpu_unavailable_reason
from lm_eval_longmem.models.landmark.block_store import BlockStore, ReusedBuffer
from lm_eval_longmem.models.landmark.grouped_query import grouped_matmul
from lm_eval_longmem.models.landmark.retrieval import BlockChooser, Selection
from lm_eval_longmem.models.landmark.signed_rope import rotate_signed, signed_sin
from lm_eval_longmem.models.landmark.slots import landmark_score_positions, slot_origin, slot_steps
from lm_eval_longmem.models.runtime.llama_decoder import Decoder, rotate, soft_cap

# Retrieved keys and values are gathered per query and head ([H, c, k, B, d] each), so a window's
# queries go through in pieces (results do not depend on the piece size). On a GPU, fewer and
# larger pieces mean fewer kernel launches: pieces fill GATHER_BUDGET_BYTES, sized so that the
# study's whole window goes through in one piece on its 1B Llama. On the CPU, larger gathers fall
# out of the caches: pieces hold the number of queries that measured fastest there
# (docs/methods/landmark.md, "Speed"), unless the C function reads the blocks in place (float32,
# a C compiler): then nothing is gathered and a window goes through whole.
GATHER_BUDGET_BYTES = 512 * 2**20
CPU_QUERIES_PER_PASS = 64
MIN_QUERIES_PER_PASS = 16


def queries_per_pass(decoder: Decoder, block_size: int, top_k: int, window: int) -> int:
    """How many of a window's queries go through in one piece on the decoder's device."""
    if decoder.device.type == "cpu":
        in_place = decoder.dtype == torch.float32 and retrieval_cpu.LIBRARY.available()
        return window if in_place else min(window, CPU_QUERIES_PER_PASS)
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
        self._gathered: ReusedBuffer | None = None  # memory for the gathers of one feed
        self.local = self._empty_window()
        self.landmarks: list[torch.Tensor] = []  # per layer, set at each fold (_rotated_landmarks)
        self.tokens_seen = 0
        self._tables = None
        self.last_chosen: list[torch.Tensor | None] = [None] * d.num_layers  # per layer [H, c, k], for inspection

    @property
    def window_fill(self) -> int:
        return self.local[0].pre_rope_keys.shape[1]

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
        self._gathered = ReusedBuffer()  # shared by the feed's pieces and layers, not kept after it
        try:
            while start < len(ids):
                stop = start + min(len(ids) - start, self.window - self.window_fill, self.pass_size)
                pieces.append(self._forward(ids[start:stop]))
                start = stop
                if self.window_fill == self.window:
                    self._fold()
        finally:
            self._gathered = None
        return pieces[0] if len(pieces) == 1 else torch.cat(pieces)

    # --- the loop ----------------------------------------------------------------------------
    def _empty_window(self) -> list[Window]:
        d = self.decoder
        empty = torch.empty(d.num_kv_heads, 0, d.head_dim, dtype=d.dtype, device=d.device)
        return [Window(empty, empty, empty) for _ in range(d.num_layers)]

    def _rope(self, like: torch.Tensor):
        if self._tables is None:
            B, k = self.block_size, self.top_k
            self._tables = self.decoder.rope((k + 1) * B + self.window, like)
            # for the rotations of every piece (signed_rope.py): the positions, and minus each of
            # the k + 1 slot starts (slots.slot_steps) for the queries
            self._signed_tables = [(cos, signed_sin(sin)) for cos, sin in self._tables]
            self._slot_tables = [
                (cos[: (k + 1) * B : B], signed_sin(-sin[: (k + 1) * B : B])) for cos, sin in self._tables
            ]
        return self._tables

    def _forward(self, ids: list[int]) -> torch.Tensor:
        d = self.decoder
        x = d.embed(torch.tensor(ids, device=d.device))
        self._rope(x)
        for layer in range(d.num_layers):
            q, k, v = d.project(layer, d.attention_input(layer, x))
            heads = self._attend(layer, q, k, v)
            x = d.mlp_block(layer, x + d.attention_output(layer, heads))
        self.tokens_seen += len(ids)
        return d.final_norm(x)

    def _attend(self, layer, q, new_keys, new_values) -> torch.Tensor:
        """Attention output [H, c, d] of the piece's queries q [H, c, d]; its keys and values [Hkv, c, d]
        (all pre-RoPE) join the window first."""
        d, B = self.decoder, self.block_size
        cos, sin_signed = self._signed_tables[layer]
        group = q.shape[0] // new_keys.shape[0]
        store = self.stores[layer]
        n = store.num_blocks
        k = min(self.top_k, n) if self.retrieval else 0
        # Window tokens follow the slot area, whose (k + 1) blocks end where the window starts.
        base = (k + 1) * B if k else 0
        window = self.local[layer]
        here = slice(base + window.pre_rope_keys.shape[1], base + window.pre_rope_keys.shape[1] + q.shape[1])
        # queries and keys in one rotation (also one copy of the transposed projections, which the
        # grouped products need contiguous)
        queries, keys = rotate_signed(torch.cat([q, new_keys]), cos[here], sin_signed[here]).split(
            [q.shape[0], new_keys.shape[0]]
        )
        window = self.local[layer] = window.extended(new_keys, keys, new_values)
        retrieved = None
        if k:
            landmark_scores = grouped_matmul(queries, self.landmarks[layer].transpose(1, 2))
            chosen = self.choosers[layer].choose(soft_cap(landmark_scores * d.scaling, d.attn_softcap), k)
            self.last_chosen[layer] = chosen
            # q . R(start) k' = (R(-start) q) . k': one rotation per query and chosen block, instead
            # of one per retrieved key ([H, c, k, d] against [H, c, k, B, d]). A block starts at one
            # of k + 1 places: rotate each query to all of them once and pick.
            slot_cos, slot_sin_signed = self._slot_tables[layer]
            at_every_start = rotate_signed(
                queries[:, :, None].expand(-1, -1, k + 1, -1), slot_cos[: k + 1], slot_sin_signed[: k + 1]
            )  # [H, c, k + 1, d]
            steps = slot_steps(chosen, n, self.top_k)[..., None].expand(-1, -1, -1, queries.shape[-1])
            queries_at_slots = at_every_start.gather(2, steps)
            read_in_place = (queries_at_slots, queries, window.keys, window.values, store.keys, store.values)
            if cpu_unavailable_reason(read_in_place, torch.is_grad_enabled() and queries.requires_grad) is None:
                # the CPU's C function reads the chosen blocks where they lie (no gather); every slot
                # holds a block (k <= n), and the piece's queries are the last of the window's keys
                every_slot = torch.ones(chosen.shape, dtype=torch.bool, device=chosen.device)
                first_place = window.keys.shape[1] - q.shape[1]
                return cpu_retrieval_attention(
                    *read_in_place, chosen, every_slot, self.window, d.scaling, d.attn_softcap, first_place
                )
            block_keys, block_values = store.gather(chosen, group, self._gathered)  # [H, c, k, B, d]
            retrieved = torch.einsum("hckd,hckbd->hckb", queries_at_slots, block_keys).flatten(2)
        scores = grouped_matmul(queries, window.keys.transpose(1, 2))  # the window's, after the C path's return
        if retrieved is not None:
            scores = torch.cat([retrieved, scores], dim=-1)
        weights = grouped_softmax(soft_cap(scores.float() * d.scaling, d.attn_softcap), B).to(q.dtype)
        out = grouped_matmul(weights[..., k * B :], window.values)
        if k:
            # [H, c, 1, kB] @ [H, c, kB, d], summed slot by slot: an einsum over k and b copied the
            # gathered values to put b first
            out = out + (weights[..., None, : k * B] @ block_values.flatten(2, 3)).squeeze(-2)
        return out

    def _fold(self) -> None:
        """The full window's blocks join the store; the next window starts empty."""
        for store, chooser, window, (cos, sin) in zip(self.stores, self.choosers, self.local, self._tables):
            store.append(window.pre_rope_keys, window.values, cos[: self.block_size], sin[: self.block_size])
            chooser.reset()
        self.local = self._empty_window()
        if self.retrieval:
            self.landmarks = self._rotated_landmarks()

    def _rotated_landmarks(self) -> list[torch.Tensor]:
        """Per layer, every cached landmark key [Hkv, n, d] rotated to where the next window scores it.
        The store changes only at a fold, so this is done once per window and layer, not per piece.

        Positions are shifted to the slot area's origin, as all of a window's are: stored keys are
        already rotated by their offset in the block (block_store.py), so a landmark scored at
        position s needs only the rotation by s - (B - 1)."""
        n, B = self.num_blocks, self.block_size
        at = landmark_score_positions(n, self.top_k, B, self.decoder.device) - slot_origin(n, self.top_k, B) - (B - 1)
        return [rotate(store.landmark_keys(), cos[at], sin[at]) for store, (cos, sin) in zip(self.stores, self._tables)]


class Window(NamedTuple):
    """One layer's current window: keys before RoPE (they join the store at the fold, rotated by
    their offset in the block), the same keys rotated at their positions in the window (each piece
    rotates only its own keys, once), and the values; all [Hkv, fill, d]."""

    pre_rope_keys: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor

    def extended(self, pre_rope_keys: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> Window:
        return Window(*(torch.cat(pair, dim=1) for pair in zip(self, (pre_rope_keys, keys, values))))
