"""Generation through a bounded cache: chunked prefill of the prompt, then token-by-token
decoding whose cache is shrunk once per `chunk_size` tokens (`models.generation` seam)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

from lm_eval_longmem.models.bounded_cache.decoder import Decoder
from lm_eval_longmem.models.bounded_cache.policy import CachePolicy
from lm_eval_longmem.models.bounded_cache.runner import BoundedCacheRunner
from lm_eval_longmem.models.generation import GenerationRequest

logger = logging.getLogger(__name__)

SAMPLING_OPTIONS = {"do_sample", "temperature", "top_k", "top_p"}


class BoundedCacheGenerator:
    def __init__(self, decoder: Decoder, make_policy: Callable[[], CachePolicy], tokenizer=None):
        self.decoder = decoder
        self.make_policy = make_policy
        self.tokenizer = tokenizer
        self.last_runner: BoundedCacheRunner | None = None
        self._warned = False

    @torch.no_grad()
    def generate(self, request: GenerationRequest) -> list[int]:
        if not request.prompt_ids:
            raise ValueError("generation needs a non-empty prompt")
        policy = self.make_policy()
        runner = BoundedCacheRunner(self.decoder, policy)
        self.last_runner = runner
        prompt = list(request.prompt_ids)
        chunk = policy.args.chunk_size
        for start in range(0, len(prompt), chunk):
            stop = min(start + chunk, len(prompt))
            hidden = runner.feed_chunk(prompt[start:stop], next_id=prompt[stop] if stop < len(prompt) else None)
        generated: list[int] = []
        logits = self.decoder.logits(hidden[-1])
        for step in range(request.max_new_tokens):
            token = self._pick(logits, request.sampling)
            generated.append(token)
            if token in request.stop_token_ids or self._hit_stop_string(generated, request.stop_strings):
                break
            if step + 1 < request.max_new_tokens:
                logits = self.decoder.logits(runner.feed_token(token)[-1])
        return generated

    def _pick(self, logits: torch.Tensor, sampling: dict) -> int:
        unknown = set(sampling) - SAMPLING_OPTIONS
        if unknown and not self._warned:
            logger.warning("bounded-cache generation ignores the options %s", sorted(unknown))
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

    def _hit_stop_string(self, generated: list[int], stop_strings) -> bool:
        if not stop_strings or self.tokenizer is None:
            return False
        text = self.tokenizer.decode(generated[-64:], skip_special_tokens=False)
        return any(stop in text for stop in stop_strings)
