"""The causal LM that `landmark` trains: each packed chunk with landmarks inserted, one grouped-softmax
forward over it (no retrieval: the chunk is one window), as the official training runs it. Apart
from approaches/landmark.py because it needs torch at import, and the approaches are imported to
read a recipe, before torch loads.

The loss, with landmarks in it (the study's setting): cross-entropy over the whole augmented chunk,
so a block's last token learns to predict `<landmark>` and the landmark's output the next block's
first token. Without: only visible tokens are targets, each predicted from the position that
predicts it at inference (`layout.predicting_position`: the token before a landmark)."""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn


class LandmarkCausalLM(nn.Module):
    """`model(input_ids, labels)` -> `.loss` over each row with its landmarks."""

    def __init__(self, model, landmark_id: int, block_size: int, landmark_in_loss: bool):
        super().__init__()
        self.model = model
        self.landmark_id, self.block_size, self.landmark_in_loss = landmark_id, block_size, landmark_in_loss

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None):
        """`labels` as in transformers (the row itself shifted inside; -100 is not a target);
        None: every token. Landmarks are targets whenever they are in the loss."""
        from lm_eval_longmem.models.landmark.layout import insert_landmarks, predicting_position
        from lm_eval_longmem.models.landmark.sequence import LandmarkSequence
        from lm_eval_longmem.models.methods.landmark import WHO
        from lm_eval_longmem.models.runtime.llama_decoder import Decoder

        decoder, B = Decoder(self.model, WHO), self.block_size
        losses = []
        targets = input_ids if labels is None else labels
        for row, row_targets in zip(input_ids.tolist(), targets.tolist()):
            augmented = insert_landmarks(row, B, self.landmark_id)
            window = -(-len(augmented) // B) * B
            sequence = LandmarkSequence(decoder, B, 1, window, retrieval=False, pass_size=None)
            hidden = sequence.feed(augmented)
            if self.landmark_in_loss:
                target = torch.tensor(insert_landmarks(row_targets, B, self.landmark_id), device=hidden.device)
                losses.append(F.cross_entropy(decoder.logits(hidden[:-1]).float(), target[1:]))
                continue
            sources = torch.tensor(
                [predicting_position(t, B, False) for t in range(len(row) - 1)], device=hidden.device
            )
            visible = torch.tensor(row_targets[1:], device=hidden.device)
            losses.append(F.cross_entropy(decoder.logits(hidden[sources]).float(), visible))
        return SimpleNamespace(loss=torch.stack(losses).mean())
