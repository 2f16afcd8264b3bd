"""Visible tokens through Landmark Attention: the landmarks go in as the stream grows, one output per
visible token comes out.

A `<landmark>` follows every `block_size - 1` visible tokens, generated ones included
(`layout.insert_landmarks`). The shared scorer and generator (`models/runtime/`) see only visible
tokens: the output of visible token t is the one that predicts the visible token after it
(`layout.predicting_position`: the closing landmark's when the model was trained with landmarks in
the loss, else the token's own). Every window's outputs count, where the official forward returns
only the last window's logits.

`VisibleStream` runs window by window through a `LandmarkSequence` (generation, and the reference
the layer-major path is tested against); `LayerMajorStream` runs a row layer by layer, every window
at once (`LayerMajorLandmark`, scoring's fast path).
"""

from __future__ import annotations

import torch

from lm_eval_longmem.models.landmark.layer_major import LayerMajorLandmark
from lm_eval_longmem.models.landmark.layout import augmented_position, insert_landmarks, predicting_position
from lm_eval_longmem.models.landmark.sequence import LandmarkSequence


class _Landmarked:
    def __init__(self, decoder, block_size: int, landmark_id: int, landmark_in_loss: bool):
        self.decoder = decoder
        self.block_size, self.landmark_id, self.landmark_in_loss = block_size, landmark_id, landmark_in_loss
        self.visible = 0  # visible tokens fed so far

    def _augment(self, ids: list[int]) -> tuple[list[int], list[int]]:
        """The augmented tokens of `ids` and, per visible token, the index among them of its output."""
        before, block = self.visible, self.block_size
        self.visible += len(ids)
        base = augmented_position(before, block)
        predicting = [predicting_position(t, block, self.landmark_in_loss) - base for t in range(before, self.visible)]
        return insert_landmarks(ids, block, self.landmark_id, before), predicting

    def head(self, rows: torch.Tensor) -> torch.Tensor:
        return self.decoder.logits(rows)


class VisibleStream(_Landmarked):
    def __init__(self, sequence: LandmarkSequence, landmark_id: int, landmark_in_loss: bool):
        super().__init__(sequence.decoder, sequence.block_size, landmark_id, landmark_in_loss)
        self.sequence = sequence

    def feed_pieces(self, ids: list[int], read_from: int = 0, last: bool = False):
        """A window at a time (a block and its landmark never straddle two windows)."""
        augmented, predicting = self._augment(ids)
        sequence, start, first = self.sequence, 0, 0  # first: the piece's first visible token
        while start < len(augmented):
            stop = min(len(augmented), start + sequence.window - sequence.window_fill)
            hidden = sequence.feed(augmented[start:stop])
            end = first
            while end < len(predicting) and predicting[end] < stop:
                end += 1
            read = max(first, read_from)
            if read < end:
                yield read, hidden[[predicting[t] - start for t in range(read, end)]]
            first, start = end, stop

    def step(self, token: int) -> torch.Tensor:
        *_, (_, rows) = self.feed_pieces([token])
        return rows


class LayerMajorStream(_Landmarked):
    """A whole row in one piece, fed once: one stream per row, over a shared `LayerMajorLandmark`."""

    def __init__(self, layer_major: LayerMajorLandmark, landmark_id: int, landmark_in_loss: bool):
        super().__init__(layer_major.decoder, layer_major.block_size, landmark_id, landmark_in_loss)
        self.layer_major = layer_major

    def feed_pieces(self, ids: list[int], read_from: int = 0, last: bool = False):
        augmented, predicting = self._augment(ids)
        hidden = self.layer_major.hidden(augmented)
        yield read_from, hidden[torch.tensor(predicting[read_from:], device=hidden.device)]
