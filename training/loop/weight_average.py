"""An exponential moving average of the trained weights (the controlled study keeps one with a
constant decay and evaluates it). Saved with the checkpoints; the export holds the average."""

from __future__ import annotations

import torch


class WeightAverage:
    def __init__(self, model, decay: float):
        self.decay = decay
        self.shadow = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}

    @torch.no_grad()
    def update(self, model) -> None:
        for name, param in model.named_parameters():
            if name in self.shadow:
                self.shadow[name].lerp_(param.detach(), 1.0 - self.decay)

    @torch.no_grad()
    def copy_to(self, model) -> None:
        for name, param in model.named_parameters():
            if name in self.shadow:
                param.copy_(self.shadow[name])

    def state_dict(self) -> dict:
        return {"decay": self.decay, "shadow": self.shadow}

    def load_state_dict(self, state: dict) -> None:
        self.decay = state["decay"]
        self.shadow = {n: t.to(self.shadow[n].device) for n, t in state["shadow"].items()}
