"""`yarn`: YaRN (Peng et al. 2023; controlled study eq. 10, appendix 7.6).

NTK-by-parts: dimensions that rotate more than beta_fast times over the original length keep
their frequency, those rotating fewer than beta_slow times are interpolated by 1/t, a linear
ramp in between; attention logits are sharpened by the temperature sqrt(1/T) = 0.1 ln t + 1
(applied to both q and k). transformers' native `yarn` rope type implements it (its ramp is
linear in the dimension index between the two correction dimensions, as YaRN's reference
code); the study used beta_fast 32, beta_slow 1."""

import dataclasses

from lm_eval_longmem.models.method_framework.rope_extension_family import RopeExtensionMethod, TargetArgs
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.rope.parameters import set_rope_type


@dataclasses.dataclass(frozen=True)
class YarnArgs(TargetArgs):
    beta_fast: float = dataclasses.field(default=32.0, metadata={"help": "rotations above which a dimension is kept"})
    beta_slow: float = dataclasses.field(
        default=1.0, metadata={"help": "rotations below which a dimension is divided by t"}
    )
    attention_factor: float | None = dataclasses.field(
        default=None, metadata={"help": "q/k scale sqrt(1/T) (default 0.1 ln t + 1)"}
    )

    def __post_init__(self):
        super().__post_init__()
        if self.beta_fast <= self.beta_slow:
            raise ValueError(f"beta_fast ({self.beta_fast}) must be larger than beta_slow ({self.beta_slow})")
        # Both are rotation counts whose logarithm sets a correction dimension: 0 or less has none.
        if self.beta_slow <= 0:
            raise ValueError(f"beta_slow must be a positive number of rotations, got {self.beta_slow}")
        if self.attention_factor is not None and self.attention_factor <= 0:
            raise ValueError(f"attention_factor scales q and k and must be positive, got {self.attention_factor}")


class YaRN(RopeExtensionMethod):
    name = "yarn"
    summary = "YaRN: NTK-by-parts frequency ramp (beta_fast/beta_slow) + attention temperature 0.1 ln t + 1"
    paper = "YaRN (Peng et al. 2023); the study's eq. 10"
    docs_page = "methods/rope.md"
    tiny_settings = TinySettings(acting={"factor": 2}, neutral={"factor": 1})
    Args = YarnArgs

    def prepare_config(self, config) -> None:
        original = self.original_length(config)
        set_rope_type(
            config,
            self.name,
            "yarn",
            factor=self.factor_for(original),
            original_max_position_embeddings=original,
            beta_fast=self.args.beta_fast,
            beta_slow=self.args.beta_slow,
            attention_factor=self.args.attention_factor,
        )
