"""The bounded-cache forward loop: chunked prefill that compresses as it goes, then decoding.

One runner holds one sequence's per-layer caches. `feed_chunk` processes up to `chunk_size`
tokens against the cache and returns their final hidden states (so a scorer gets every
token's logits as it is processed); when the cache would exceed the budget, the policy
shrinks it right after the chunk, before the chunk's own entries are appended:

    cache (<= M entries) + chunk (c tokens)  ->  shrink cache by len + c - M  ->  append chunk

so the stored cache never holds more than M = max_context_length entries between chunks, and
attention never sees more than M + c entries. For stated-CLM the chunk's forward runs with
gradients enabled on the cached keys/values (model weights stay frozen), and one backward of
its causal-LM loss gives the Fisher information for the merge (§3.4: k pairs per forward and
backward). Decoding appends one entry per token; once `chunk_size` tokens have piled up past
the budget, the cache is shrunk the same way (stated-CLM re-runs those tokens as one chunk
with gradients, which is the "one forward and backward per k tokens" of §3.4).

A runner is the bounded caches' `runtime/streaming_sequence.DecodingSequence`: the shared scorer
and generator feed it through `feed_pieces` (chunks) and `step` (decoding).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lm_eval_longmem.models.bounded_cache.attention import attend, logit_bias
from lm_eval_longmem.models.bounded_cache.layer_cache import LayerCache
from lm_eval_longmem.models.bounded_cache.policy import CachePolicy, Evidence
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.streaming_sequence import piece_bounds
from lm_eval_longmem.models.runtime.token_upload import ids_to_device


class BoundedCacheRunner:
    def __init__(self, decoder: Decoder, policy: CachePolicy):
        self.decoder = decoder
        self.policy = policy
        self.caches = [
            LayerCache.empty(decoder.num_kv_heads, decoder.head_dim, decoder.dtype, decoder.device)
            for _ in range(decoder.num_layers)
        ]
        self.recent_ids: list[int] = []  # token ids behind the newest entries (at most chunk_size)
        self.tokens_seen = 0
        self.widest_attention = 0  # most keys one query has attended to (budget checks)
        self.shrinks = 0
        self._tables = None  # per layer (cos, sin), from the decoder's rotary embedding

    def __len__(self) -> int:
        return len(self.caches[0])

    # --- public ------------------------------------------------------------------------------
    def feed_pieces(self, ids: list[int], read_from: int = 0, last: bool = False):
        """Chunks of `chunk_size`, each with the token after it as one more target of its LM loss; the
        last chunk of a `last` row shrinks nothing, as nothing reads the cache after it."""
        for start, stop in piece_bounds(len(ids), self.policy.args.chunk_size):
            more = stop < len(ids)
            yield start, self.feed_chunk(ids[start:stop], next_id=ids[stop] if more else None, shrink=more or not last)

    def step(self, token_id: int) -> torch.Tensor:
        return self.feed_token(token_id)

    def head(self, rows: torch.Tensor) -> torch.Tensor:
        return self.decoder.logits(rows)

    def feed_chunk(self, ids: list[int], next_id: int | None = None, shrink: bool = True) -> torch.Tensor:
        """Final hidden states [c, hidden] of `ids`; `next_id` (the token after them, if known)
        is one more target for the chunk's LM loss when the cache is compressed. With
        `shrink=False` the entries are appended past the budget (decoding piles up a chunk)."""
        over = len(self) + len(ids) - self.policy.budget
        remove = over if shrink and not self.policy.keeps_everything else 0
        if remove > 0 and self.policy.needs_evidence:
            hidden, new_kv = self._forward_and_compress(ids, next_id, remove)
        else:
            hidden, new_kv, _ = self._forward(ids, want_received=False)
            if remove > 0 and self.policy.spares_new_entries and all(j is not None for _, _, j in new_kv):
                # the same entries go from the cache joined with the chunk: one copy, not shrink + append
                new_kv = [(k, v, self.policy.shrink(joined, remove, None)) for k, v, joined in new_kv]
                self.shrinks += 1
            elif remove > 0:
                self.caches = [self.policy.shrink(cache, remove, None) for cache in self.caches]
                new_kv = [(k, v, None) for k, v, _ in new_kv]  # the shrunk cache moved: append anew
                self.shrinks += 1
        self._append(ids, new_kv)
        return hidden

    def feed_token(self, token_id: int) -> torch.Tensor:
        """Decode step: hidden state [1, hidden] of one new token. Shrinks first when a whole
        chunk has piled up past the budget."""
        chunk = self.policy.args.chunk_size
        overflow = len(self) - self.policy.budget
        if not self.policy.keeps_everything and overflow >= chunk:
            if self.policy.needs_evidence:
                tail = self.recent_ids[-chunk:]
                self.caches = [cache.prefix(len(cache) - chunk) for cache in self.caches]
                self.recent_ids = self.recent_ids[:-chunk]
                self.tokens_seen -= chunk  # fed again, as one chunk with gradients
                self.feed_chunk(tail, next_id=token_id)
            else:
                self.caches = [self.policy.shrink(cache, overflow, None) for cache in self.caches]
                self.shrinks += 1
        return self.feed_chunk([token_id], shrink=False)

    # --- the loop ----------------------------------------------------------------------------
    def _rope(self, n: int, like: torch.Tensor):
        have = self._tables[0][0].shape[0] if self._tables is not None else 0
        if have < n:
            self._tables = self.decoder.rope(max(n, 2 * have, 256), like)
        return self._tables

    def _forward(self, ids: list[int], want_received: bool):
        d = self.decoder
        c = len(ids)
        x = d.embed(ids_to_device(ids, d.device))
        tables = self._rope(len(self) + c, x)
        new_kv, received = [], []
        biases = {}  # unit counts: the attention bias depends only on the window's length
        for layer in range(d.num_layers):
            cos, sin = tables[layer]
            q, k, v = d.project(layer, d.attention_input(layer, x))
            cache = self.caches[layer]
            window = self.policy.window(layer, cache, q)
            joined = window.extend(k, v, cos, sin)
            self.widest_attention = max(self.widest_attention, len(joined))
            bias = None
            if self.policy.unit_counts and len(window):
                bias = biases.get(len(window))
                if bias is None:
                    bias = biases[len(window)] = logit_bias(window.log_counts, c, q.dtype)
            out, got = attend(
                q,
                joined.rotated_keys(cos, sin),
                joined.values,
                window.log_counts if bias is None else None,  # with a shared bias, no log per layer
                cos,
                sin,
                d.scaling,
                want_received,
                d.attn_softcap,
                bias,
            )
            x = d.mlp_block(layer, x + d.attention_output(layer, out))
            # what the cache becomes if nothing is removed: the joined window, when it is the whole cache
            new_kv.append((k, v, joined.detached() if window is cache else None))
            received.append(got)
        return d.final_norm(x), new_kv, received

    def _forward_and_compress(self, ids: list[int], next_id: int | None, remove: int):
        """One forward with gradients on the cached keys/values, one backward of the chunk's
        causal-LM loss, then the policy merges `remove` entries per layer."""
        self.caches = [
            LayerCache(c.keys.detach().requires_grad_(), c.values.detach().requires_grad_(), c.counts, c.rotated)
            for c in self.caches
        ]
        leaves = [t for c in self.caches for t in (c.keys, c.values)]
        targets = list(ids[1:]) + ([next_id] if next_id is not None else [])
        with torch.enable_grad():
            hidden, new_kv, received = self._forward(ids, want_received=True)
            if targets:
                logits = self.decoder.logits(hidden[: len(targets)]).float()
                loss = F.cross_entropy(logits, ids_to_device(targets, logits.device), reduction="sum")
                grads = torch.autograd.grad(loss, leaves, allow_unused=True)
            else:
                grads = [None] * len(leaves)
        caches = []
        for layer, cache in enumerate(self.caches):
            cache = cache.detached()
            key_grad, value_grad = grads[2 * layer], grads[2 * layer + 1]
            evidence = Evidence(
                key_grad if key_grad is not None else torch.zeros_like(cache.keys),
                value_grad if value_grad is not None else torch.zeros_like(cache.values),
                received[layer],
            )
            caches.append(self.policy.shrink(cache, remove, evidence))
        self.caches = caches
        self.shrinks += 1
        return hidden.detach(), [(k.detach(), v.detach(), None) for k, v, _ in new_kv]

    def _append(self, ids: list[int], new_kv) -> None:
        self.caches = [
            joined if joined is not None else cache.append(k, v) for cache, (k, v, joined) in zip(self.caches, new_kv)
        ]
        self.recent_ids = (self.recent_ids + list(ids))[-self.policy.args.chunk_size :]
        self.tokens_seen += len(ids)
