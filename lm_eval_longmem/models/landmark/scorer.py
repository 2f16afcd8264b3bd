"""Teacher-forced scoring under Landmark Attention: landmarks inserted, every window's outputs kept.

A row's visible tokens become the augmented stream (`layout.insert_landmarks`), which runs window
by window through one `LandmarkSequence`; each scored visible token is predicted from the output
that predicts it there (`layout.predicting_position`: the closing landmark's when the model was
trained with landmarks in the loss). Every window's outputs count, where the official forward
returns only the last window's logits.

With a `LayerMajorLandmark` the row goes through layer by layer, every window at once (the fast
path); without, window by window through the sequence (the reference it is tested against).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from lm_eval_longmem.models.landmark.layer_major import LayerMajorLandmark
from lm_eval_longmem.models.landmark.layout import insert_landmarks, predicting_position
from lm_eval_longmem.models.landmark.sequence import LandmarkSequence
from lm_eval_longmem.models.runtime.requests import ScoredContinuation
from lm_eval_longmem.models.runtime.scoring import ScoredSpan, SpanTotals


class LandmarkScorer:
    strategy = "landmark_windows"

    def __init__(
        self,
        start_sequence: Callable[[], LandmarkSequence],
        landmark_id: int,
        landmark_in_loss: bool,
        layer_major: LayerMajorLandmark | None = None,
    ):
        self.start_sequence = start_sequence
        self.layer_major = layer_major
        self.landmark_id = landmark_id
        self.landmark_in_loss = landmark_in_loss
        self.last_sequence: LandmarkSequence | None = None  # kept for inspection (tests, benchmarks)
        self.decoder = None  # the model's, once a row has run

    @torch.no_grad()
    def score(self, input_ids: torch.Tensor, spans: list[ScoredSpan]) -> list[ScoredContinuation]:
        """Score a right-padded batch [B, T]: row b's real tokens end with its span."""
        return [self._score_row(input_ids[b, : s.start + len(s.targets)].tolist(), s) for b, s in enumerate(spans)]

    def row_hidden(self, row: list[int], visible_positions: range) -> torch.Tensor:
        """Final hidden states [len(visible_positions), hidden] that predict the token after each position."""
        if self.layer_major is not None:
            self.decoder = self.layer_major.decoder
            augmented, wanted = self._augmented(row, visible_positions, self.layer_major.block_size)
            hidden = self.layer_major.hidden(augmented)
            return hidden[torch.tensor(wanted, device=hidden.device)]
        sequence = self.start_sequence()
        self.last_sequence, self.decoder = sequence, sequence.decoder
        augmented, wanted = self._augmented(row, visible_positions, sequence.block_size)
        kept, start = [], 0
        for stop in range(sequence.window, len(augmented) + sequence.window, sequence.window):
            stop = min(stop, len(augmented))
            hidden = sequence.feed(augmented[start:stop])
            rows = [p - start for p in wanted if start <= p < stop]
            if rows:
                kept.append(hidden[rows])
            start = stop
        return torch.cat(kept)

    def _augmented(self, row: list[int], visible_positions: range, block: int) -> tuple[list[int], list[int]]:
        """The augmented stream and the positions in it that predict each scored token."""
        augmented = insert_landmarks(row, block, self.landmark_id)
        return augmented, [predicting_position(t, block, self.landmark_in_loss) for t in visible_positions]

    def _score_row(self, row: list[int], span: ScoredSpan) -> ScoredContinuation:
        hidden = self.row_hidden(row, range(span.start, span.start + len(span.targets)))
        totals = SpanTotals()
        decoder = self.decoder
        targets = torch.tensor(span.targets, device=hidden.device)
        for first in range(0, len(targets), 256):
            totals.add(decoder.logits(hidden[first : first + 256]), targets[first : first + 256])
        return totals.result(len(span.targets))
