"""Generation through a bounded cache: chunked prefill of the prompt, then token-by-token
decoding whose cache is shrunk once per `chunk_size` tokens (`models.generation` seam)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from lm_eval_longmem.models.bounded_cache.policy import CachePolicy
from lm_eval_longmem.models.bounded_cache.runner import BoundedCacheRunner
from lm_eval_longmem.models.runtime.generation import GenerationRequest
from lm_eval_longmem.models.runtime.heap_release import HeapRelease
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.stepwise_decoding import TokenPicker, decode_tokens


class BoundedCacheGenerator:
    def __init__(self, decoder: Decoder, make_policy: Callable[[], CachePolicy], tokenizer=None):
        self.decoder = decoder
        self.make_policy = make_policy
        self.tokenizer = tokenizer
        self.last_runner: BoundedCacheRunner | None = None
        self.pick = TokenPicker("bounded-cache")

    @torch.no_grad()
    def generate(self, request: GenerationRequest) -> list[int]:
        if not request.prompt_ids:
            raise ValueError("generation needs a non-empty prompt")
        policy = self.make_policy()
        runner = BoundedCacheRunner(self.decoder, policy)
        self.last_runner = runner
        prompt = list(request.prompt_ids)
        chunk, release = policy.args.chunk_size, HeapRelease()
        for start in range(0, len(prompt), chunk):
            stop = min(start + chunk, len(prompt))
            hidden = runner.feed_chunk(prompt[start:stop], next_id=prompt[stop] if stop < len(prompt) else None)
            release.fed(stop - start, hidden.device)

        def feed(token: int) -> torch.Tensor:
            return self.decoder.logits(runner.feed_token(token)[-1])

        return decode_tokens(self.decoder.logits(hidden[-1]), feed, request, self.pick, self.tokenizer)
