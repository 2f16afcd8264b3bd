"""One sequence through a kvpress press: its context prefilled and compressed once, the rest
fed against the compressed cache, logits kept only where someone reads them.

This is how kvpress's own pipeline runs a press, applied to any request:

* the context is one forward pass over an empty cache inside `with press(model)`: the press's
  hooks compress each layer's keys and values right after that layer's attention (kvpress
  compresses only during this first pass, its "prefill");
* everything after it attends to the compressed cache. Its positions continue from the
  context's original length (kept keys keep their RoPE positions), except for presses that
  re-rotate kept keys to consecutive positions (KeyRerotation, Finch with `rerotate_keys`,
  RestoreKV), where they continue from the compressed length, as kvpress's pipeline does;
* decoding presses (DecodingPress, PrefillDecodingPress, DMS with `decoding=True`) also
  compress while tokens are fed, so their hooks stay on, and tokens go one at a time, as in
  decoding;
* several tokens may go in one forward only when every layer kept the same number of entries:
  transformers builds one attention mask from the first layer's cache length, which would let
  a new token see the tokens after it in a layer that kept fewer (PyramidKV keeps fewer in
  higher layers). Otherwise tokens go one at a time, which needs no mask.

A pressed sequence is the `runtime/streaming_sequence.DecodingSequence` of the shared scorer and
generator: a request's context, less the token that predicts the first scored (or generated) one,
is the prefill, so every scored prediction reads the compressed cache, never the full one. The
press sees the whole prompt, question included: our tasks' prompts end with their question, and
lm-eval hands a model one prompt, not a context and a question apart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from lm_eval_longmem.errors import LongMemError
from lm_eval_longmem.models.runtime.cache_argument import cache_argument


class PressRefusedError(LongMemError, ValueError):
    """kvpress's own check refused a request's context (too short for the press's window, ...)."""


class PressedSequence:
    """A fresh cache for one sequence; `prefill(context)` once, then `logits(tokens)` any number of times."""

    def __init__(self, model, press, chunk_tokens: int):
        self.model = model
        self.press = press
        self.chunk_tokens = max(1, chunk_tokens)
        from transformers import DynamicCache

        self.cache = DynamicCache()
        self.next_position = 0
        self.one_token_at_a_time = decodes_under_press(press)

    @torch.no_grad()
    def prefill(self, token_ids: list[int]) -> None:
        """Run `token_ids` as kvpress's prefill: one pass, compressed by the press after it."""
        if not token_ids:
            return
        ids = torch.tensor([token_ids], device=self.model.device)
        try:
            with self._press_on(prefill=True):
                self.model.model(input_ids=ids, **cache_argument(self.cache), use_cache=True)
        except AssertionError as err:  # kvpress checks its inputs with asserts (e.g. SnapKV's window)
            raise PressRefusedError(
                f"press {type(self.press).__name__} refused a context of {len(token_ids)} tokens: {err}. "
                "Give it longer contexts (e.g. a larger fc_min_length) or change the press's argument named there."
            ) from None
        self.next_position = self.cache.get_seq_length() if positions_follow_cache(self.press) else len(token_ids)
        lengths = {self.cache.get_seq_length(layer) for layer in range(len(self.cache))}
        self.one_token_at_a_time = self.one_token_at_a_time or len(lengths) > 1

    def feed_pieces(self, token_ids: list[int], read_from: int = 0, last: bool = False):
        """On a fresh cache: `token_ids[:read_from]` is the prefill (no logits), the rest yields its
        logits a piece at a time."""
        self.prefill(token_ids[:read_from])
        start = read_from
        for logits in self.logits_by_piece(token_ids[read_from:]):
            yield start, logits
            start += logits.shape[0]

    def step(self, token: int) -> torch.Tensor:
        return self.logits([token])

    def head(self, rows: torch.Tensor) -> torch.Tensor:
        return rows  # the model's own forward already gives logits

    def logits(self, token_ids: list[int]) -> torch.Tensor:
        """Feed a few `token_ids` after what came before: their logits, one row per token."""
        return torch.cat(list(self.logits_by_piece(token_ids)))

    @torch.no_grad()
    def logits_by_piece(self, token_ids: list[int]) -> Iterator[torch.Tensor]:
        """Feed `token_ids` after what came before; yields the logits of each piece fed (one row
        per token, in order), so a caller can score a piece before the next is computed."""
        step = 1 if self.one_token_at_a_time else self.chunk_tokens
        with self._press_on(prefill=False):
            for start in range(0, len(token_ids), step):
                piece = token_ids[start : start + step]
                ids = torch.tensor([piece], device=self.model.device)
                positions = torch.arange(self.next_position, self.next_position + len(piece), device=self.model.device)
                out = self.model(
                    input_ids=ids, **cache_argument(self.cache), position_ids=positions[None], use_cache=True
                )
                self.next_position += len(piece)
                yield out.logits[0]

    def kept_entries(self) -> list[int]:
        """Entries the cache holds per layer now."""
        return [self.cache.get_seq_length(layer) for layer in range(len(self.cache))]

    def _press_on(self, prefill: bool):
        wanted = compresses_in_prefill(self.press) if prefill else decodes_under_press(self.press)
        return self.press(self.model) if wanted else contextlib.nullcontext()


def _kvpress_types():
    from kvpress import DecodingPress, DMSPress, FinchPress, KeyRerotationPress, PrefillDecodingPress, RestoreKVPress

    return DecodingPress, DMSPress, FinchPress, KeyRerotationPress, PrefillDecodingPress, RestoreKVPress


def compresses_in_prefill(press) -> bool:
    decoding, *_ = _kvpress_types()
    return not isinstance(press, decoding)


def decodes_under_press(press) -> bool:
    decoding, dms, _, _, prefill_decoding, _ = _kvpress_types()
    return isinstance(press, (decoding, prefill_decoding)) or (isinstance(press, dms) and bool(press.decoding))


def positions_follow_cache(press) -> bool:
    _, _, finch, rerotation, _, restore = _kvpress_types()
    return isinstance(press, (rerotation, restore)) or (isinstance(press, finch) and bool(press.rerotate_keys))
