"""One sequence through Infini-attention: segments of N tokens, a compressive memory per layer.

Per layer and segment (paper §2): causal dot-product attention inside the segment, with the
model's RoPE at positions 0..N-1 restarting each segment (the local attention of the paper
covers "the N tokens of the current segment"; the base model never sees a distance beyond N);
retrieval from the memory of the previous segments with the pre-RoPE queries; the per-head gate
mixes the two (eq. 6); once the segment is complete its pre-RoPE keys and values are folded
into the memory (eq. 4/5). The model's own modules do everything else (`llama_decoder.Decoder`).

Tokens can be fed in any pieces — a whole segment (scoring), a prompt, one token at a time
(decoding): the current segment's keys/values wait in a local cache (pre-RoPE keys, as the
bounded caches store them, with the rotated ones memoized) until the segment is full, so
decoding attends to the current segment and reads the memory exactly as scoring does. A
recurrence is the `runtime/streaming_sequence.DecodingSequence` of the shared scorer and generator:
segment by segment (`feed_pieces`), then one token at a time (`step`).

An empty memory (the first segment) retrieves nothing: eq. 3 is 0/0 there. We then use the
local attention alone rather than mixing in zeros, which would scale the first segment's
attention by 1 - sigmoid(beta); an input no longer than one segment is exactly the base model.

Gradients: nothing is detached, so under `torch.enable_grad` a training loop backpropagates
through the memory across segments (or detaches `memories` itself to truncate); evaluation
runs under `no_grad`.
"""

from __future__ import annotations

import torch

from lm_eval_longmem.models.bounded_cache.attention import attend
from lm_eval_longmem.models.bounded_cache.layer_cache import LayerCache
from lm_eval_longmem.models.compressive_memory.gates import MemoryGates
from lm_eval_longmem.models.compressive_memory.memory import CompressiveMemory, UpdateRule
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.streaming_sequence import piece_bounds


class SegmentRecurrence:
    def __init__(
        self, decoder: Decoder, gates: MemoryGates, segment_length: int, update: UpdateRule, read_memory: bool = True
    ):
        self.decoder = decoder
        self.read_memory = read_memory  # False: local attention alone in every segment (the ablation)
        self.gates = gates
        self.segment_length = segment_length
        self.update = update
        d = decoder
        self.memories = [
            CompressiveMemory.empty(d.num_kv_heads, d.head_dim, d.head_dim, d.device) for _ in range(d.num_layers)
        ]
        self.segment = self._empty_segment()
        self.tokens_seen = 0
        self.segments_folded = 0
        self._tables = None  # per layer (cos, sin), from the decoder's rotary embedding

    @property
    def segment_fill(self) -> int:
        """Tokens of the current (not yet folded) segment."""
        return len(self.segment[0])

    def feed(self, ids: list[int]) -> torch.Tensor:
        """Final hidden states [len(ids), hidden] (after the final norm) of the next tokens."""
        if not ids:
            raise ValueError("feed needs at least one token")
        pieces = []
        start = 0
        while start < len(ids):
            stop = start + min(len(ids) - start, self.segment_length - self.segment_fill)
            pieces.append(self._forward(ids[start:stop]))
            start = stop
            if self.segment_fill == self.segment_length:
                self._fold()
        return pieces[0] if len(pieces) == 1 else torch.cat(pieces)

    def feed_pieces(self, ids: list[int], read_from: int = 0, last: bool = False):
        """One segment's hidden states at a time, so peak memory is set by the segment length."""
        for start, stop in piece_bounds(len(ids), self.segment_length):
            yield start, self.feed(ids[start:stop])

    def step(self, token: int) -> torch.Tensor:
        return self.feed([token])

    def head(self, rows: torch.Tensor) -> torch.Tensor:
        return self.decoder.logits(rows)

    # --- the loop ----------------------------------------------------------------------------
    def _empty_segment(self) -> list[LayerCache]:
        d = self.decoder
        return [LayerCache.empty(d.num_kv_heads, d.head_dim, d.dtype, d.device) for _ in range(d.num_layers)]

    def _rope(self, like: torch.Tensor):
        if self._tables is None:
            self._tables = self.decoder.rope(self.segment_length, like)
        return self._tables

    def _forward(self, ids: list[int]) -> torch.Tensor:
        d = self.decoder
        x = d.embed(torch.tensor(ids, device=d.device))
        tables = self._rope(x)
        for layer in range(d.num_layers):
            cos, sin = tables[layer]
            q, k, v = d.project(layer, d.attention_input(layer, x))
            local = self.segment[layer]
            joined = local.extend(k, v, cos, sin)
            heads, _ = attend(
                q,
                joined.rotated_keys(cos, sin),
                joined.values,
                local.log_counts,
                cos,
                sin,
                d.scaling,
                softcap=d.attn_softcap,
            )
            memory = self.memories[layer]
            if self.read_memory and not memory.is_empty:
                heads = self.gates.mix(layer, memory.retrieve(q), heads)
            x = d.mlp_block(layer, x + d.attention_output(layer, heads))
            self.segment[layer] = joined
        self.tokens_seen += len(ids)
        return d.final_norm(x)

    def _fold(self) -> None:
        """The full segment's keys and values go into the memory; the next segment starts empty."""
        self.memories = [
            memory.updated(local.keys, local.values, self.update) for memory, local in zip(self.memories, self.segment)
        ]
        self.segment = self._empty_segment()
        self.segments_folded += 1
