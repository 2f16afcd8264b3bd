"""What the RoPE-extension methods share: a target length (factor t or target_length C') over
an original length C, the raised context length, and the check that the model has RoPE.

A base class, not a method (it sets no `name`); the formulas it uses are in `models/rope/`."""

from __future__ import annotations

import dataclasses

from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.rope.parameters import original_length, rope_parameters

DEFAULT_FACTOR = 4.0  # the study's LLaMA-3 (8k) setting: extend 8k -> 32k (Tables 13-14)


@dataclasses.dataclass(frozen=True)
class TargetArgs:
    factor: float | None = dataclasses.field(
        default=None,
        metadata={"help": f"target length ratio t = C'/C (default {DEFAULT_FACTOR} unless target_length is given)"},
    )
    target_length: int | None = dataclasses.field(
        default=None, metadata={"help": "target length C' in tokens (instead of factor)"}
    )
    original_length: int | None = dataclasses.field(
        default=None,
        metadata={
            "help": "pretraining length C (default: the checkpoint's original_max_position_embeddings "
            "or max_position_embeddings)"
        },
    )

    def __post_init__(self):
        if self.factor is not None and self.target_length is not None:
            raise ValueError("give factor or target_length, not both")
        if self.factor is not None and self.factor < 1:
            raise ValueError(f"factor must be >= 1, got {self.factor}")
        for name in ("target_length", "original_length"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be a positive number of tokens, got {value}")


class RopeExtensionMethod(LongMemMethod):
    """Base of the methods that extend a RoPE model to a target length."""

    Args = TargetArgs
    rewrites_rope = True

    def __init__(self, args=None):
        super().__init__(args)
        self._original_length: int | None = None

    def factor_for(self, original: int) -> float:
        if self.args.target_length is not None:
            return max(1.0, self.args.target_length / original)
        return float(self.args.factor if self.args.factor is not None else DEFAULT_FACTOR)

    def original_length(self, config) -> int:
        """C for this config (and remembered, so `context_length` can use it)."""
        rope_parameters(config, self.name)  # a clear error for models without RoPE
        self._original_length = original_length(config, self.name, self.args.original_length)
        return self._original_length

    @classmethod
    def resolved_defaults(cls, args) -> dict:
        return {"factor": DEFAULT_FACTOR} if args.target_length is None else {}

    def resolved_args(self) -> dict:
        values = super().resolved_args()
        if self._original_length is not None:  # C, read from the config; the factor a target_length makes
            values["original_length"] = self._original_length
            if values.get("factor") is None:
                values["factor"] = self.factor_for(self._original_length)
        return values

    def context_length(self, base_length: int) -> int:
        if self.args.target_length is not None:
            return max(base_length, int(self.args.target_length))
        original = self.args.original_length or self._original_length or base_length
        return max(base_length, int(round(self.factor_for(original) * original)))
