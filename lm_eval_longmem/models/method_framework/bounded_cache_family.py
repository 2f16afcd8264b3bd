"""The part every bounded-cache method shares: hooking the policy into the wrapper.

A method subclasses `BoundedCacheMethod`, declares its `Args` (a `BudgetArgs` subclass) and
`make_policy`; scoring and generation then run through `BoundedCacheRunner`, a sequence of the
shared `StreamingScorer` and `StreamingGenerator`. A base class, not a
method (it sets no `name`): it lives here, above the machinery of `models/bounded_cache/`, which
never imports a method.
"""

from __future__ import annotations

import logging
from abc import ABCMeta, abstractmethod

from lm_eval_longmem.models.bounded_cache.policy import CachePolicy
from lm_eval_longmem.models.bounded_cache.runner import BoundedCacheRunner
from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from lm_eval_longmem.models.runtime.piecewise_scoring import StreamingScorer
from lm_eval_longmem.models.runtime.stepwise_decoding import StreamingGenerator

logger = logging.getLogger(__name__)


class BoundedCacheMethod(LongMemMethod, metaclass=ABCMeta):
    # Positions are re-indexed inside the cache, so any input length works; default task grids
    # stay at the training length so the curves compare with `vanilla` point for point.
    bounded_memory = True

    @abstractmethod
    def make_policy(self) -> CachePolicy:
        """A fresh policy (one per sequence: policies may keep per-sequence state)."""

    def prepare_model(self, model):
        decoder = Decoder(model)  # refuses unsupported architectures now, not mid-evaluation
        model.requires_grad_(False)  # stated-CLM's backward needs gradients of the cache only
        trained = getattr(model.config, "max_position_embeddings", None)
        widest = self.args.max_context_length + self.args.chunk_size
        if trained and widest > trained:
            logger.warning(
                "method=%s: attention spans up to max_context_length + chunk_size = %d positions, more than "
                "the %d this model was trained on; lower max_context_length or chunk_size to stay inside it.",
                self.name,
                widest,
                trained,
            )
        layout = decoder.layout
        if layout.sliding_layers and layout.sliding_window < widest:
            logger.warning(
                "method=%s: the model's sliding window (%d, on %d of %d layers) is not applied; attention is bounded "
                "by the cache budget instead (up to %d entries).",
                self.name,
                layout.sliding_window,
                len(layout.sliding_layers),
                layout.num_layers,
                widest,
            )
        return model

    @property
    def scoring_strategy(self) -> str:
        return f"bounded_cache:{self.name}"

    def make_scorer(self, model):
        return self.make_chunk_runner_scorer(model)

    def make_chunk_runner_scorer(self, model) -> StreamingScorer:
        """Chunk by chunk through every layer: the reference a faster scorer is tested against."""
        decoder = Decoder(model)
        return StreamingScorer(model, lambda: BoundedCacheRunner(decoder, self.make_policy()), self.scoring_strategy)

    prefix_cache_reusable = False  # which entries are kept depends on the whole prompt

    def make_generator(self, model, tokenizer):
        decoder = Decoder(model)
        return StreamingGenerator(lambda: BoundedCacheRunner(decoder, self.make_policy()), "bounded-cache", tokenizer)
