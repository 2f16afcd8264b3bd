"""`self_extend`: Self-Extend (Jin et al. 2024; controlled study §3.3 eq. 13, appendix 7.8).

Training-free: keys within the neighbour window M keep their true relative position, farther
keys are seen at grouped positions (group size N), so every distance stays inside the
training length C for inputs up to (C - M) * N + M tokens, which becomes the context length.
The attention is computed in two parts (models/attention/self_extend.py)."""

import dataclasses

from lm_eval_longmem.models.attention.install import install
from lm_eval_longmem.models.attention.self_extend import SelfExtendRule
from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.rope.parameters import original_length, rope_parameters


@dataclasses.dataclass(frozen=True)
class SelfExtendArgs:
    window: int = dataclasses.field(
        default=2048, metadata={"help": "neighbour window M (paper: 2048 for 8k LLaMA-3, 1024 for 4k LLaMA-2)"}
    )
    group: int = dataclasses.field(
        default=32, metadata={"help": "group size N (paper: 32 for LLaMA-3, 64 for LLaMA-2)"}
    )
    original_length: int | None = dataclasses.field(
        default=None, metadata={"help": "training length C (default: the checkpoint's)"}
    )

    def __post_init__(self):
        if self.window < 0 or self.group < 1:
            raise ValueError(f"need window >= 0 and group >= 1, got window={self.window}, group={self.group}")
        if self.original_length is not None and self.original_length < 1:  # 0 would silently mean the checkpoint's
            raise ValueError(f"original_length must be a positive number of tokens, got {self.original_length}")


class SelfExtend(LongMemMethod):
    name = "self_extend"
    summary = "Self-Extend: neighbour window M at true distance + grouped (size N) distances beyond"
    paper = "Self-Extend (Jin et al. 2024); the study's eq. 13"
    docs_page = "methods/rope.md"
    # neutral: every key within the neighbour window
    tiny_settings = TinySettings(acting={"window": 16, "group": 2}, neutral={"window": 60, "group": 2})
    Args = SelfExtendArgs
    rewrites_rope = True

    def __init__(self, args=None):
        super().__init__(args)
        self._original_length: int | None = None

    def prepare_config(self, config) -> None:
        rope_parameters(config, self.name)  # Gemma 3: the global layers' (the rule runs there)
        self._original_length = original_length(config, self.name, self.args.original_length)
        if self.args.window >= self._original_length:
            raise ValueError(
                f"method=self_extend: window={self.args.window} must be smaller than the training length "
                f"{self._original_length}, or nothing is grouped."
            )

    def prepare_model(self, model):
        return install(model, SelfExtendRule(window=self.args.window, group=self.args.group), self.name)

    def resolved_args(self) -> dict:
        values = super().resolved_args()
        if values.get("original_length") is None:
            values["original_length"] = self._original_length  # C, the checkpoint's
        return values

    def context_length(self, base_length: int) -> int:
        original = self.args.original_length or self._original_length or base_length
        return max(base_length, (original - self.args.window) * self.args.group + self.args.window)
