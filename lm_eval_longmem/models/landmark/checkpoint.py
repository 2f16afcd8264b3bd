"""What a landmark checkpoint carries: the `<landmark>` token and the block layout it was trained with.

The study's format (the official `LlamaLandmarkConfig`, model type `llama_with_landmark`) puts four
keys in `config.json`:
`mem_id` (the landmark token's id), `mem_freq` (visible tokens per block, B - 1),
`train_context_length` and `include_landmark_in_loss`. Our training writes the same keys (plus
the method record), so either kind of checkpoint runs with `method=landmark` and, unless told
otherwise, with the block size, training length and loss convention it was trained with.
"""

from __future__ import annotations

from dataclasses import dataclass

from lm_eval_longmem.errors import UsageError
from lm_eval_longmem.models.checkpoint.model_type_names import STUDY_MODEL_TYPE

LANDMARK_TOKEN = "<landmark>"
LANDMARK_ID_KEY = "mem_id"
VISIBLE_PER_BLOCK_KEY = "mem_freq"
TRAIN_LENGTH_KEY = "train_context_length"
LOSS_KEY = "include_landmark_in_loss"


def is_study_landmark(config_dict: dict) -> bool:
    """Whether a config.json dict has the study's model type (which implies method=landmark)."""
    return config_dict.get("model_type") == STUDY_MODEL_TYPE


class NoLandmarkTokenError(UsageError):
    """The checkpoint was never trained with landmarks."""


@dataclass(frozen=True)
class TrainedLayout:
    landmark_id: int
    block_size: int | None
    train_context_length: int | None
    landmark_in_loss: bool | None


def trained_layout(config, who: str) -> TrainedLayout:
    """The checkpoint's landmark token and layout, or one clear refusal when it has none."""
    landmark_id = getattr(config, LANDMARK_ID_KEY, None)
    if landmark_id is None:
        raise NoLandmarkTokenError(
            f"{who}: this checkpoint has no {LANDMARK_TOKEN} token ({LANDMARK_ID_KEY} is missing from its config): "
            "it was never trained with landmarks, and Landmark Attention cannot run an untrained model. Train one "
            "with `lm-eval-longmem train landmark` (or tiny-landmark), or use a checkpoint in the study's "
            f"format ({LANDMARK_ID_KEY}, {VISIBLE_PER_BLOCK_KEY} and {TRAIN_LENGTH_KEY} in config.json)."
        )
    vocab = getattr(config, "vocab_size", None)
    if vocab is not None and not 0 <= int(landmark_id) < vocab:
        raise NoLandmarkTokenError(
            f"{who}: the config's {LANDMARK_ID_KEY}={landmark_id} is not a token of the model (vocabulary {vocab})."
        )
    visible = getattr(config, VISIBLE_PER_BLOCK_KEY, None)
    loss = getattr(config, LOSS_KEY, None)
    return TrainedLayout(
        int(landmark_id),
        None if visible is None else int(visible) + 1,
        getattr(config, TRAIN_LENGTH_KEY, None),
        None if loss is None else bool(loss),
    )


def record_layout(config, landmark_id: int, block_size: int, train_context_length: int, landmark_in_loss: bool):
    """Write the study's keys into a config (training's export)."""
    setattr(config, LANDMARK_ID_KEY, int(landmark_id))
    setattr(config, VISIBLE_PER_BLOCK_KEY, int(block_size) - 1)
    setattr(config, TRAIN_LENGTH_KEY, int(train_context_length))
    setattr(config, LOSS_KEY, bool(landmark_in_loss))
