"""The causal LM that `infini` trains: each row run segment by segment through the plugin's own
segment loop (`models/compressive_memory`), the very code that evaluates it, with gradients
through the memory across segments. Apart from approaches/infini.py because it needs torch at
import, and the approaches are imported to read a recipe, before torch loads."""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn


class SegmentedCausalLM(nn.Module):
    """`model(input_ids, labels)` -> `.loss`, each row run segment by segment through the memory."""

    def __init__(self, model, segment_length: int, update: str):
        super().__init__()
        self.model = model
        self.segment_length = segment_length
        self.update = update

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None):
        from lm_eval_longmem.models.compressive_memory import SegmentRecurrence
        from lm_eval_longmem.models.compressive_memory.checkpoint import gates_of
        from lm_eval_longmem.models.methods.infini import WHO
        from lm_eval_longmem.models.runtime.llama_decoder import Decoder

        decoder, gates = Decoder(self.model, WHO), gates_of(self.model)
        losses = []
        for row in input_ids:
            recurrence = SegmentRecurrence(decoder, gates, self.segment_length, self.update)
            logits = decoder.logits(recurrence.feed(row.tolist()))
            losses.append(F.cross_entropy(logits[:-1].float(), row[1:]))
        return SimpleNamespace(loss=torch.stack(losses).mean())
