"""`dynamic_ntk`: the study's dynamic NTK (appendix 7.8, after Fu et al. 2024).

NTK scaling (eq. 9) whose t is replaced by s*max(C', C_test)/C - (s-1): C the original length,
C' the length the checkpoint was trained to (C' = C for an untouched model: the study's
"NTK-Frozen"), C_test the length of the current sequence. The base is frozen at its value
for C' until a sequence is longer than C'. transformers' `dynamic` type differs (it rescales
from C and remembers the longest length seen), so this uses our rope type
`longmem_ntk_length_scaled` and sets the base per sequence (rope/dynamic_update.py).
`factor`/`target_length` only set how long an input the wrapper accepts."""

import dataclasses

from lm_eval_longmem.models.rope.dynamic_update import install_length_scaled_update
from lm_eval_longmem.models.rope.extension_method import RopeExtensionMethod, TargetArgs
from lm_eval_longmem.models.rope.parameters import set_rope_type
from lm_eval_longmem.models.rope.rope_types import LENGTH_SCALED_NTK
from lm_eval_longmem.models.rope.rotation import the_rotary_embedding


@dataclasses.dataclass(frozen=True)
class DynamicNTKArgs(TargetArgs):
    s: float = dataclasses.field(
        default=2.0, metadata={"help": "scale hyperparameter s (paper: 2 for NTK-Frozen, C'/(2C) after fine-tuning)"}
    )
    training_length: int | None = dataclasses.field(
        default=None, metadata={"help": "C', the length the checkpoint was trained to (default: C, untrained)"}
    )

    def __post_init__(self):
        super().__post_init__()
        if self.s < 1:
            raise ValueError(f"s must be >= 1, got {self.s}")


class DynamicNTK(RopeExtensionMethod):
    name = "dynamic_ntk"
    summary = "dynamic NTK with the base frozen up to the training length: t = s*max(C', C_test)/C - (s-1)"
    Args = DynamicNTKArgs
    prefix_cache_reusable = False  # the base, hence every cached key, depends on the prompt's length

    def prepare_config(self, config) -> None:
        original = self.original_length(config)
        set_rope_type(
            config, self.name, LENGTH_SCALED_NTK,
            s=self.args.s,
            training_length=self.args.training_length or original,
            original_max_position_embeddings=original,
        )

    def prepare_model(self, model):
        install_length_scaled_update(the_rotary_embedding(model, self.name), model.config)
        return model
