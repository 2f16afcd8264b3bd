"""`infini`: Infini-attention (Munkhdalai et al. 2024), segment-level recurrence with a compressive memory.

Each layer attends causally inside segments of `segment_length` tokens, reads a float32
associative memory of all earlier segments with its pre-RoPE queries, and mixes the two with a
learned gate per head; segments are then folded into the memory (`update`: linear or delta).
The machinery is `models/compressive_memory/`; this file declares the arguments and hooks it in.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings

logger = logging.getLogger(__name__)

WHO = "method=infini (Infini-attention)"


@dataclass(frozen=True)
class InfiniArgs:
    segment_length: int = field(
        default=2048,
        metadata={"help": "tokens per segment N: local attention inside it, memory across segments (paper: 2048)"},
    )
    update: Literal["linear", "delta"] = field(
        default="linear",
        metadata={"help": "memory update: linear (eq. 4) or delta (eq. 5, Linear + Delta); the paper reports both"},
    )
    beta_init: float = field(
        default=-4.0,
        metadata={
            "help": "initial gate logit of every head when the model has no trained gates; sigmoid(-4) = 0.018 "
            "keeps an untrained model near its base (the paper does not say; 0 gives 0.5)"
        },
    )

    read_memory: bool = field(
        default=True,
        metadata={
            "help": "false: every segment uses its local attention alone, the memory never read (the ablation "
            "that shows what a trained model retrieves through its memory)"
        },
    )

    def __post_init__(self):
        if self.segment_length < 1:
            raise ValueError(f"segment_length must be a positive number of tokens, got {self.segment_length}")


class Infini(LongMemMethod):
    name = "infini"
    summary = "Infini-attention: local attention per segment + a compressive memory of past segments, gated per head"
    paper = "Munkhdalai et al. 2024, *Leave No Context Behind*"
    docs_page = "methods/infini.md"
    # acting: three segments; neutral: one segment, local attention only, the memory stays empty
    tiny_settings = TinySettings(acting={"segment_length": 16}, neutral={"segment_length": 64})
    Args = InfiniArgs
    # Memory stays bounded by the segment: any input length, default grids at the base length.
    bounded_memory = True
    prefix_cache_reusable = False  # the memory and local cache follow the prompt's own segmentation

    def prepare_config(self, config) -> None:
        self._check_segment_fits(config)

    def prepare_model(self, model):
        from lm_eval_longmem.models.compressive_memory import load_gates
        from lm_eval_longmem.models.compressive_memory.checkpoint import GATES_FILE, IncompleteCheckpointError
        from lm_eval_longmem.models.runtime.llama_decoder import Decoder

        decoder = Decoder(model, WHO)  # refuses unsupported architectures now, not mid-evaluation
        self._check_segment_fits(model.config)
        window = decoder.layout.sliding_window
        if decoder.layout.sliding_layers and window < self.args.segment_length:
            logger.warning(
                "%s: the model's sliding window (%d tokens, %d of %d layers) is not applied; local attention is "
                "bounded by the segment instead (%d tokens). Use segment_length <= %d to keep it exact.",
                WHO,
                window,
                len(decoder.layout.sliding_layers),
                decoder.num_layers,
                self.args.segment_length,
                window,
            )
        _, trained = load_gates(model, self.args.beta_init, decoder.num_layers, decoder.num_heads)
        if trained:
            return model
        if getattr(model.config, "longmem_method", None) == self.name:
            raise IncompleteCheckpointError(
                f"{model.name_or_path} records method=infini but has no {GATES_FILE}: the checkpoint is incomplete "
                "(write it with lm_eval_longmem.models.compressive_memory.save_infini_checkpoint)."
            )
        logger.warning(
            "%s: this model was never trained with Infini-attention; its gates are untrained (sigmoid(beta_init=%g) = "
            "%.3f for every head), so the memory is mixed in with that fixed weight. Results measure the untrained "
            "mechanism, not a trained Infini-Transformer.",
            WHO,
            self.args.beta_init,
            _sigmoid(self.args.beta_init),
        )
        return model

    def make_scorer(self, model):
        from lm_eval_longmem.models.runtime.piecewise_scoring import StreamingScorer

        return StreamingScorer(model, self._sequence_factory(model), "infini_segments")

    def make_generator(self, model, tokenizer):
        from lm_eval_longmem.models.runtime.stepwise_decoding import StreamingGenerator

        return StreamingGenerator(self._sequence_factory(model), "Infini-attention", tokenizer)

    # --- helpers ---------------------------------------------------------------------------
    def _sequence_factory(self, model):
        from lm_eval_longmem.models.compressive_memory import SegmentRecurrence
        from lm_eval_longmem.models.compressive_memory.checkpoint import gates_of
        from lm_eval_longmem.models.runtime.llama_decoder import Decoder

        if gates_of(model) is None:
            self.prepare_model(model)
        decoder, gates = Decoder(model, WHO), gates_of(model)
        args = self.args
        return lambda: SegmentRecurrence(decoder, gates, args.segment_length, args.update, read_memory=args.read_memory)

    def _check_segment_fits(self, config) -> None:
        from lm_eval_longmem.models.checkpoint.context_length import training_length
        from lm_eval_longmem.models.method_framework.arguments import MethodArgumentError

        base = training_length(config)
        if self.args.segment_length > base:
            raise MethodArgumentError(
                f"method=infini: segment_length={self.args.segment_length} is longer than the base model's context "
                f"({base} tokens): local attention inside a segment would use positions the model never saw. "
                f"Use segment_length <= {base} (the paper: 2048)."
            )


def _sigmoid(x: float) -> float:
    import math

    return 1.0 / (1.0 + math.exp(-x))
