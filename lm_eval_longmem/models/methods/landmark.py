"""`landmark`: Landmark Attention (Mohtashami & Jaggi 2023), block retrieval through landmark tokens.

A `<landmark>` token closes every block of `block_size - 1` tokens; trained with the grouped
softmax, its key gates attention to its block. At inference the input runs in windows of
W = T - T mod B - (k+1)B tokens; every layer keeps a store of completed blocks and, per query token
and head, retrieves the top-k blocks by landmark score into slots just before the window. The
machinery is `models/landmark/` and the `grouped_softmax` kernel op; this file declares the
arguments, reads the checkpoint's layout and refuses what cannot run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings

WHO = "method=landmark (Landmark Attention)"
STUDY_BLOCK_SIZE = 64
STUDY_TRAIN_LENGTH = 512
STUDY_TOP_K = 5  # the study's evaluation setting (cache_top_k 5)
SCORING = "landmark_windows"  # what results files record as `longmem_scoring`


@dataclass(frozen=True)
class LandmarkArgs:
    block_size: int | None = field(
        default=None,
        metadata={
            "help": "tokens per block, its landmark included (default: the checkpoint's mem_freq + 1, else 64 as "
            "the study; the released LLaMA weights use 51)"
        },
    )
    top_k: int | None = field(
        default=None, metadata={"help": "blocks each query token and head retrieves (default 5, as the study)"}
    )
    train_context_length: int | None = field(
        default=None,
        metadata={
            "help": "the length the model was trained on, which sizes the window (default: the checkpoint's, else 512)"
        },
    )
    selection: Literal["per_token_and_head", "max_over_tokens"] = field(
        default="per_token_and_head",
        metadata={
            "help": "per_token_and_head: each query token and head picks its blocks (the official default); "
            "max_over_tokens: one choice per head, softmaxed landmark scores maxed over the window's tokens so far"
        },
    )
    landmark_in_loss: bool | None = field(
        default=None,
        metadata={
            "help": "whether the model learned to predict from landmarks: then a block's landmark predicts the next "
            "block's first token (default: the checkpoint's include_landmark_in_loss, else true as the study)"
        },
    )
    retrieval: bool = field(
        default=True,
        metadata={"help": "false: each window attends to itself alone, the block store never read (the ablation)"},
    )

    def __post_init__(self):
        if self.block_size is not None and self.block_size < 2:
            raise ValueError(
                f"block_size must be at least 2 (its tokens plus the landmark that closes it), got {self.block_size}"
            )
        if self.top_k is not None and not self.retrieval:
            raise ValueError(
                f"top_k={self.top_k} has no effect with retrieval=false (no block is retrieved): drop top_k, "
                "or drop retrieval=false"
            )
        if self.top_k is None:
            object.__setattr__(self, "top_k", STUDY_TOP_K)  # frozen: the resolved default, set once
        if self.top_k < 1:
            raise ValueError(
                f"top_k must be at least 1 retrieved block, got {self.top_k} (retrieval=false switches retrieval off)"
            )
        if self.train_context_length is not None and self.train_context_length < 1:
            raise ValueError(
                f"train_context_length must be a positive number of tokens, got {self.train_context_length}"
            )


class Landmark(LongMemMethod):
    name = "landmark"
    summary = "Landmark Attention: blocks closed by landmark tokens, top-k block retrieval per token and head"
    paper = "Mohtashami & Jaggi 2023, *Landmark Attention*"
    docs_page = "methods/landmark.md"
    # on its tiny checkpoint (blocks of 4, length 32): windows of 20, so 44 tokens retrieve
    tiny_settings = TinySettings(
        acting={"top_k": 2},
        neutral=None,
        never_neutral_because="inserts a <landmark> token after every block: the model reads another sequence",
    )
    Args = LandmarkArgs
    # What attention reads per window (k blocks + the window) and every position stay within the
    # training length, so any input length runs; the block store itself grows with the input.
    bounded_memory = True
    checkpoint_mechanism = "landmark tokens closing each block and the grouped attention that retrieves blocks"
    prefix_cache_reusable = False  # windows follow the prompt's own landmarks and blocks

    @classmethod
    def resolved_defaults(cls, args) -> dict[str, Any]:
        return {"top_k": STUDY_TOP_K}

    @classmethod
    def recorded_arguments_kept(cls, recorded: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        """A trained export records its top_k; `retrieval=false` on it (the ablation) drops it."""
        if str(given.get("retrieval", "")).strip().lower() in ("false", "0", "no", "off"):
            return {k: v for k, v in recorded.items() if k != "top_k"}
        return recorded

    def __init__(self, args: Any = None):
        super().__init__(args)
        self.layout = None  # the checkpoint's (TrainedLayout), once seen

    def prepare_config(self, config) -> None:
        from lm_eval_longmem.models.landmark.checkpoint import trained_layout
        from lm_eval_longmem.models.landmark.layout import window_length

        self.layout = trained_layout(config, WHO)
        window_length(self.train_context_length, self.block_size, self.args.top_k)

    def prepare_model(self, model):
        from lm_eval_longmem.models.runtime.llama_decoder import Decoder

        Decoder(model, WHO)  # refuses unsupported architectures now, not mid-evaluation
        self.prepare_config(model.config)
        return model

    # --- the layout this run uses ----------------------------------------------------------
    @property
    def block_size(self) -> int:
        return _first(self.args.block_size, self.layout and self.layout.block_size, STUDY_BLOCK_SIZE)

    @property
    def train_context_length(self) -> int:
        return _first(
            self.args.train_context_length, self.layout and self.layout.train_context_length, STUDY_TRAIN_LENGTH
        )

    @property
    def landmark_in_loss(self) -> bool:
        return _first(self.args.landmark_in_loss, self.layout and self.layout.landmark_in_loss, True)

    @property
    def window(self) -> int:
        from lm_eval_longmem.models.landmark.layout import window_length

        return window_length(self.train_context_length, self.block_size, self.args.top_k)

    def resolved_args(self) -> dict[str, Any]:
        values = dataclasses.asdict(self.args)
        values.update(
            block_size=self.block_size,
            train_context_length=self.train_context_length,
            landmark_in_loss=self.landmark_in_loss,
        )
        return values

    # --- hooks -----------------------------------------------------------------------------
    def make_scorer(self, model):
        """Layer by layer, every window at once (`make_window_scorer` is the reference)."""
        from lm_eval_longmem.models.landmark.layer_major import LayerMajorLandmark
        from lm_eval_longmem.models.landmark.visible_stream import LayerMajorStream
        from lm_eval_longmem.models.runtime.llama_decoder import Decoder
        from lm_eval_longmem.models.runtime.piecewise_scoring import StreamingScorer

        self._prepared(model)
        args = self.args
        layer_major = LayerMajorLandmark(
            Decoder(model, WHO), self.block_size, args.top_k, self.window, args.selection, args.retrieval
        )
        landmark_id, in_loss = self.layout.landmark_id, self.landmark_in_loss
        return StreamingScorer(model, lambda: LayerMajorStream(layer_major, landmark_id, in_loss), SCORING)

    def make_window_scorer(self, model):
        """Window by window, as generation runs: the reference of the layer-major scorer."""
        from lm_eval_longmem.models.runtime.piecewise_scoring import StreamingScorer

        return StreamingScorer(model, self._stream_factory(model), SCORING)

    def make_generator(self, model, tokenizer):
        from lm_eval_longmem.models.runtime.stepwise_decoding import StreamingGenerator

        start = self._stream_factory(model)
        return StreamingGenerator(start, "Landmark Attention", tokenizer, never_emits=(self.layout.landmark_id,))

    def _stream_factory(self, model):
        from lm_eval_longmem.models.landmark.sequence import LandmarkSequence
        from lm_eval_longmem.models.landmark.visible_stream import VisibleStream
        from lm_eval_longmem.models.runtime.llama_decoder import Decoder

        self._prepared(model)
        decoder, args, block, window = Decoder(model, WHO), self.args, self.block_size, self.window
        landmark_id, in_loss = self.layout.landmark_id, self.landmark_in_loss

        def start() -> VisibleStream:
            sequence = LandmarkSequence(decoder, block, args.top_k, window, args.selection, args.retrieval)
            return VisibleStream(sequence, landmark_id, in_loss)

        return start

    def _prepared(self, model) -> None:
        """Read the checkpoint's layout if `prepare_model` has not run (a model object passed in)."""
        if self.layout is None:
            self.prepare_model(model)


def _first(*values):
    return next(v for v in values if v is not None)
