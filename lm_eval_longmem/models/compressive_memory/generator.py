"""Generation under Infini-attention: the prompt goes in segment by segment, then each new token
attends to the current segment's local cache and reads the memory; a segment that fills up
during decoding is folded into the memory like any other (`models.generation` seam)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from lm_eval_longmem.models.compressive_memory.recurrence import SegmentRecurrence
from lm_eval_longmem.models.runtime.generation import GenerationRequest
from lm_eval_longmem.models.runtime.heap_release import HeapRelease
from lm_eval_longmem.models.runtime.stepwise_decoding import TokenPicker, decode_tokens


class InfiniGenerator:
    def __init__(self, start_sequence: Callable[[], SegmentRecurrence], tokenizer=None):
        self.start_sequence = start_sequence
        self.tokenizer = tokenizer
        self.pick = TokenPicker("Infini-attention")
        self.last_recurrence: SegmentRecurrence | None = None

    @torch.no_grad()
    def generate(self, request: GenerationRequest) -> list[int]:
        if not request.prompt_ids:
            raise ValueError("generation needs a non-empty prompt")
        recurrence = self.start_sequence()
        self.last_recurrence = recurrence
        prompt, step, release = list(request.prompt_ids), recurrence.segment_length, HeapRelease()
        for start in range(0, len(prompt), step):  # one segment's hidden states at a time
            hidden = recurrence.feed(prompt[start : start + step])
            release.fed(len(hidden), hidden.device)
        logits = recurrence.decoder.logits(hidden[-1])
        return decode_tokens(
            logits,
            lambda token: recurrence.decoder.logits(recurrence.feed([token])[-1]),
            request,
            self.pick,
            self.tokenizer,
        )
