"""The CLEX layer: inverse RoPE frequencies theta_t = exp(z(t)) for a length factor t.

Attached to a model as `model.model.clex_layer` (the authors' name, so the weights save and load
under their keys: `clex_layer.inv_freq`, `clex_layer.proj_func.ode_up_proj`, `...ode_down_proj`).

* Inference: t = ceil(L / C) for a sequence of L tokens (cache included) over the base length C,
  t = 1 (the model's own frequencies) up to C; the ODE is solved once for t = 1..max_factor on
  one grid, kept, and solved again only when its weights change. Past C * max_factor there are
  no frequencies: `FactorLimitError` names the limit.
* Training: one integer t' per forward, the ODE solved from 1 to t' with gradients.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from lm_eval_longmem.errors import UsageError
from lm_eval_longmem.models.clex.frequency_field import ClexFrequencyField
from lm_eval_longmem.models.clex.ode_solver import solve


class FactorLimitError(UsageError):
    """A sequence is longer than C * max_factor, the longest CLEX has frequencies for."""


class ClexScaling(nn.Module):
    not_a_rotary_embedding = True  # its `inv_freq` (the authors' key) is theta at t = 1, not a table in use

    def __init__(
        self, inv_freq: torch.Tensor, original_length: int, max_factor: int, param_factor: int, act: str, time_dt: float
    ):
        super().__init__()
        self.register_buffer("inv_freq", inv_freq.detach().to(torch.float32).clone())
        self.proj_func = ClexFrequencyField(2 * inv_freq.shape[-1], param_factor, act)
        self.proj_func.to(inv_freq.device)
        self.original_length = int(original_length)
        self.max_factor = int(max_factor)
        self.time_dt = float(time_dt)
        self.factors_used: set[int] = set()
        self._table: torch.Tensor | None = None
        self._table_key: tuple | None = None

    @property
    def max_length(self) -> int:
        return self.original_length * self.max_factor

    def factor_for_length(self, length: int) -> int:
        """t for a sequence of `length` tokens: ceil(length / C), at least 1."""
        if length > self.max_length:
            raise FactorLimitError(
                f"method=clex: a sequence of {length} tokens is longer than CLEX's limit C x max_factor = "
                f"{self.original_length} x {self.max_factor} = {self.max_length} tokens (the ODE gives no "
                "frequencies past t = max_factor). Use a shorter input, or a larger max_factor (beyond what "
                "the checkpoint was trained to, CLEX extrapolates)."
            )
        return max(1, math.ceil(length / self.original_length))

    def frequencies(self, factor: int) -> torch.Tensor:
        """theta_t for an integer factor t (float32, [d/2], no gradient), from the cached table."""
        self.factors_used.add(int(factor))
        if factor == 1:
            return self.inv_freq
        return self._solved_table()[factor - 1]

    def training_frequencies(self, factor: int) -> torch.Tensor:
        """theta_t' solved from 1 to t' with gradients to the ODE's weights (t' = 1: the base ones)."""
        if factor == 1:
            return self.inv_freq
        times = torch.tensor([1.0, float(factor)], device=self.inv_freq.device)
        return torch.exp(solve(self.proj_func, torch.log(self.inv_freq), times, self.time_dt)[-1])

    def _solved_table(self) -> torch.Tensor:
        key = self._weights_key()
        if self._table is None or self._table_key != key:
            times = torch.arange(1.0, self.max_factor + 1.0, dtype=torch.float32, device=self.inv_freq.device)
            with torch.no_grad():
                self._table = torch.exp(solve(self.proj_func, torch.log(self.inv_freq), times, self.time_dt))
            self._table_key = key
        return self._table

    def _weights_key(self) -> tuple:
        """Changes whenever a tensor the ODE reads is replaced or changed in place (optimizer steps, loads)."""
        tensors = (self.inv_freq, self.proj_func.ode_up_proj, self.proj_func.ode_down_proj)
        return tuple((t.data_ptr(), t._version, t.device, t.dtype) for t in tensors)
