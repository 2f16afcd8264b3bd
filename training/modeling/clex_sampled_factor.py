"""The causal LM that `clex` trains: each forward at a random factor t' with CLEX's sampled positions.

Per forward (one micro-batch), as the authors' training does: t' ~ U{1..max_factor}, positions
spread over [0, C t') (`models/clex/position_sampler.py`), and theta_t' solved from 1 to t' with
gradients to the ODE's weights U and D. With t' = 1 the base frequencies are used and U and D get
no gradient in that forward (DDP is told to expect unused parameters). The random draws use
torch's global generator, whose state a checkpoint saves, so a resumed run draws what the
uninterrupted run would have. Apart from approaches/clex.py because it needs torch at import.
"""

from __future__ import annotations

from torch import nn


class ClexSampledFactorLM(nn.Module):
    """`model(input_ids, labels)` -> the causal LM's output, at a random factor t' per call."""

    def __init__(self, model, plan):
        super().__init__()
        self.model = model
        self.plan = plan  # the ClexAttentionPlan method=clex installed on `model`

    def forward(self, input_ids, labels=None, **kwargs):
        from lm_eval_longmem.models.clex.position_sampler import sample_factor, sample_positions

        clex = self.plan.clex
        factor = sample_factor(clex.max_factor)
        positions = sample_positions(input_ids.shape[1], factor, clex.original_length).to(input_ids.device)
        self.plan.training = (positions, clex.training_frequencies(factor))
        try:
            return self.model(input_ids=input_ids, labels=labels, **kwargs)
        finally:
            self.plan.training = None

    @property
    def config(self):
        return self.model.config

    def gradient_checkpointing_enable(self, **kwargs):
        self.model.gradient_checkpointing_enable(**kwargs)
