"""Where landmarks go in a token stream, and how long a window is.

A `<landmark>` follows every `block_size - 1` visible tokens, so block n of the augmented stream
holds positions n*B .. n*B + B - 1 with its landmark last (`llama/train.py`'s `add_mem_tokens`
and generation's insertion in the official code). We insert one after a full block at the very end
too: the landmark's output is what predicts the next block's first token.
"""

from __future__ import annotations

from lm_eval_longmem.errors import UsageError


class WindowDoesNotFitError(UsageError):
    """top_k retrieved blocks plus a window do not fit in the training context."""


def window_length(train_context_length: int, block_size: int, top_k: int) -> int:
    """W = T - (T mod B) - (k + 1) B augmented tokens, the official code's `max_chunk_length`: the
    retrieved blocks, one block of slack and the window together stay within the training length."""
    window = train_context_length - train_context_length % block_size - (top_k + 1) * block_size
    if window <= 0:
        largest = (train_context_length - train_context_length % block_size) // block_size - 2
        hint = f"use top_k <= {largest}" if largest >= 1 else "use a smaller block_size"
        raise WindowDoesNotFitError(
            f"method=landmark: top_k={top_k} blocks of block_size={block_size} leave no window in "
            f"train_context_length={train_context_length} tokens (W = T - T mod B - (k+1)B = {window}); {hint}."
        )
    return window


def insert_landmarks(ids: list[int], block_size: int, landmark_id: int, before: int = 0) -> list[int]:
    """The augmented stream: a landmark after every `block_size - 1` visible tokens, counting the
    `before` visible tokens already in the stream (decoding continues one)."""
    out: list[int] = []
    for count, token in enumerate(ids, start=before + 1):
        out.append(token)
        if count % (block_size - 1) == 0:
            out.append(landmark_id)
    return out


def augmented_position(visible: int, block_size: int) -> int:
    """Position in the augmented stream of visible token `visible`."""
    return visible + visible // (block_size - 1)


def predicting_position(visible: int, block_size: int, landmark_in_loss: bool) -> int:
    """The augmented position whose output predicts the visible token after `visible`: the landmark
    that closes a block when the model was trained to predict from it, else the token itself."""
    position = augmented_position(visible, block_size)
    closes_block = (visible + 1) % (block_size - 1) == 0
    return position + 1 if closes_block and landmark_in_loss else position
