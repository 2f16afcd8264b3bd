"""Generation under Landmark Attention: the prompt with landmarks goes in window by window, then
each new token; a landmark follows every `block_size - 1` visible tokens, generated ones included,
and is never returned (its logit is masked, so the model cannot emit one either)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from lm_eval_longmem.models.landmark.sequence import LandmarkSequence
from lm_eval_longmem.models.runtime.generation import GenerationRequest
from lm_eval_longmem.models.runtime.stepwise_decoding import TokenPicker, decode_tokens


class LandmarkGenerator:
    def __init__(
        self,
        start_sequence: Callable[[], LandmarkSequence],
        landmark_id: int,
        landmark_in_loss: bool,
        tokenizer=None,
    ):
        self.start_sequence = start_sequence
        self.landmark_id = landmark_id
        self.landmark_in_loss = landmark_in_loss
        self.tokenizer = tokenizer
        self.pick = TokenPicker("Landmark Attention")
        self.last_sequence: LandmarkSequence | None = None

    @torch.no_grad()
    def generate(self, request: GenerationRequest) -> list[int]:
        if not request.prompt_ids:
            raise ValueError("generation needs a non-empty prompt")
        sequence = self.start_sequence()
        self.last_sequence = sequence
        visible = len(request.prompt_ids)
        logits = self._next_logits(sequence, list(request.prompt_ids), visible)

        def feed(token: int) -> torch.Tensor:
            nonlocal visible
            visible += 1
            return self._next_logits(sequence, [token], visible)

        return decode_tokens(logits, feed, request, self.pick, self.tokenizer)

    def _next_logits(self, sequence: LandmarkSequence, visible_ids: list[int], visible_after: int) -> torch.Tensor:
        """Feed visible tokens (a landmark after each that closes a block) and return the next token's logits."""
        per_block = sequence.block_size - 1
        augmented = []
        for count, token in enumerate(visible_ids, start=visible_after - len(visible_ids) + 1):
            augmented.append(token)
            if count % per_block == 0:
                augmented.append(self.landmark_id)
        hidden = sequence.feed(augmented)
        closes_block = visible_after % per_block == 0
        last = hidden[-1] if self.landmark_in_loss or not closes_block else _before_landmark(hidden)
        logits = sequence.decoder.logits(last).float()
        logits[self.landmark_id] = float("-inf")
        return logits


def _before_landmark(hidden: torch.Tensor) -> torch.Tensor:
    return hidden[-2]  # a landmark is always fed with the token that closes its block
