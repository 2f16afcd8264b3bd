"""Generation under a kvpress press (passkey, TopicRet, TREC): the prompt less its last token is
the press's prefill, compressed once; the last prompt token and every generated one then
attend to the compressed cache (and, for decoding presses, are compressed as they go).

The press sees the whole prompt, question included: our tasks' prompts end with their
question, and lm-eval hands a model one prompt, not a context and a question apart.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from lm_eval_longmem.models.kv_presses.pressed_sequence import PressedSequence
from lm_eval_longmem.models.runtime.generation import GenerationRequest
from lm_eval_longmem.models.runtime.stepwise_decoding import TokenPicker, decode_tokens


class PressGenerator:
    def __init__(self, model, make_press: Callable[[], object], tokenizer=None):
        self.model = model
        self.make_press = make_press
        self.tokenizer = tokenizer
        self.pick = TokenPicker("kvpress")
        self.last_sequence: PressedSequence | None = None

    @torch.no_grad()
    def generate(self, request: GenerationRequest) -> list[int]:
        if not request.prompt_ids:
            raise ValueError("generation needs a non-empty prompt")
        prompt = list(request.prompt_ids)
        sequence = PressedSequence(self.model, self.make_press(), chunk_tokens=1)
        self.last_sequence = sequence
        sequence.prefill(prompt[:-1])
        first = sequence.logits(prompt[-1:])[-1]
        return decode_tokens(first, lambda token: sequence.logits([token])[-1], request, self.pick, self.tokenizer)
