"""The token-by-token decoding loop of methods that run their own forward pass.

Bounded caches, kvpress, Infini-attention and Landmark Attention prefill a prompt their own way
(`streaming_sequence.DecodingSequence`), then need the same thing: pick a token from the last
logits (greedy, or sampled with Hugging Face's options), stop at a stop token or string, feed the
token back. One loop for all of them, so greedy/sampling and stopping behave alike whatever the
memory behind the logits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

from lm_eval_longmem.models.runtime.generation import GenerationRequest
from lm_eval_longmem.models.runtime.heap_release import HeapRelease
from lm_eval_longmem.models.runtime.streaming_sequence import DecodingSequence

logger = logging.getLogger(__name__)

SAMPLING_OPTIONS = {"do_sample", "temperature", "top_k", "top_p"}


class TokenPicker:
    """Greedy argmax, or sampling with temperature / top-k / top-p; warns once about other options."""

    def __init__(self, who: str):
        self.who = who
        self._warned = False

    def __call__(self, logits: torch.Tensor, sampling: dict) -> int:
        unknown = set(sampling) - SAMPLING_OPTIONS
        if unknown and not self._warned:
            logger.warning("%s generation ignores the options %s", self.who, sorted(unknown))
            self._warned = True
        if not sampling.get("do_sample", False) or float(sampling.get("temperature", 1.0)) == 0.0:
            return int(logits.argmax())
        logits = logits.float() / float(sampling.get("temperature", 1.0))
        top_k = int(sampling.get("top_k") or 0)
        if top_k > 0:
            kth = logits.topk(min(top_k, logits.shape[-1])).values[-1]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        top_p = float(sampling.get("top_p") or 1.0)
        if top_p < 1.0:
            sorted_logits, order = logits.sort(descending=True)
            cumulative = sorted_logits.softmax(-1).cumsum(-1)
            drop = cumulative - sorted_logits.softmax(-1) > top_p
            logits[order[drop]] = float("-inf")
        return int(torch.multinomial(logits.softmax(-1), 1))


class StreamingGenerator:
    """Generation through a fresh sequence of `start_sequence()` per request: the prompt fed in the
    method's pieces, then one token at a time. `never_emits`: tokens the method inserts itself
    (Landmark's `<landmark>`), whose logits are masked so that decoding cannot pick them."""

    def __init__(
        self,
        start_sequence: Callable[[], DecodingSequence],
        who: str,
        tokenizer=None,
        never_emits: tuple[int, ...] = (),
    ):
        self.start_sequence = start_sequence
        self.tokenizer = tokenizer
        self.never_emits = list(never_emits)
        self.pick = TokenPicker(who)

    @torch.no_grad()
    def generate(self, request: GenerationRequest) -> list[int]:
        if not request.prompt_ids:
            raise ValueError("generation needs a non-empty prompt")
        sequence, prompt, release = self.start_sequence(), list(request.prompt_ids), HeapRelease()
        for _, rows in sequence.feed_pieces(prompt, read_from=len(prompt) - 1):
            release.fed(rows.shape[0], rows.device)

        def next_logits(row: torch.Tensor) -> torch.Tensor:
            logits = sequence.head(row)
            if self.never_emits:
                logits[self.never_emits] = float("-inf")
            return logits

        return decode_tokens(
            next_logits(rows[-1]),
            lambda token: next_logits(sequence.step(token)[-1]),
            request,
            self.pick,
            self.tokenizer,
        )


def decode_tokens(
    logits: torch.Tensor,
    feed: Callable[[int], torch.Tensor],
    request: GenerationRequest,
    pick: TokenPicker,
    tokenizer=None,
) -> list[int]:
    """New tokens after a prefilled prompt whose last logits are `logits`; `feed(token)` runs one
    token through the method and returns the next logits."""
    generated: list[int] = []
    for step in range(request.max_new_tokens):
        token = pick(logits, request.sampling)
        generated.append(token)
        if token in request.stop_token_ids or _hit_stop_string(generated, request.stop_strings, tokenizer):
            break
        if step + 1 < request.max_new_tokens:
            logits = feed(token)
    return generated


def _hit_stop_string(generated: list[int], stop_strings, tokenizer) -> bool:
    if not stop_strings or tokenizer is None:
        return False
    text = tokenizer.decode(generated[-64:], skip_special_tokens=False)
    return any(stop in text for stop in stop_strings)
