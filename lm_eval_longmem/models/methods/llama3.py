"""`llama3`: Llama 3.1's RoPE scaling, transformers' native `llama3` rope type, passed through.

Wavelengths shorter than C/high_freq_factor keep their frequency, longer than
C/low_freq_factor are divided by `factor`, smoothly in between. Not one of the study's
methods; here so that models released with it (or extended with it) run with the same
length handling as the others."""

import dataclasses

from lm_eval_longmem.models.method_framework.rope_extension_family import RopeExtensionMethod, TargetArgs
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.rope.parameters import set_rope_type


@dataclasses.dataclass(frozen=True)
class Llama3Args(TargetArgs):
    low_freq_factor: float = dataclasses.field(default=1.0, metadata={"help": "Llama 3.1's low_freq_factor"})
    high_freq_factor: float = dataclasses.field(default=4.0, metadata={"help": "Llama 3.1's high_freq_factor"})

    def __post_init__(self):
        super().__post_init__()
        # The frequency bands are wavelengths C / low_freq_factor and C / high_freq_factor, and the
        # ramp between them divides by their difference: 0 < low < high, or the rope type fails or inverts.
        if not 0 < self.low_freq_factor < self.high_freq_factor:
            raise ValueError(
                f"need 0 < low_freq_factor < high_freq_factor, got low_freq_factor={self.low_freq_factor}, "
                f"high_freq_factor={self.high_freq_factor} (Llama 3.1: 1 and 4)"
            )


class Llama3(RopeExtensionMethod):
    name = "llama3"
    summary = "Llama 3.1 RoPE scaling (transformers rope_type llama3), factor t over the original length"
    paper = "Llama 3.1 (not in the study)"
    docs_page = "methods/rope.md"
    tiny_settings = TinySettings(acting={"factor": 2}, neutral={"factor": 1})
    Args = Llama3Args

    def prepare_config(self, config) -> None:
        original = self.original_length(config)
        set_rope_type(
            config,
            self.name,
            "llama3",
            factor=self.factor_for(original),
            low_freq_factor=self.args.low_freq_factor,
            high_freq_factor=self.args.high_freq_factor,
            original_max_position_embeddings=original,
        )
