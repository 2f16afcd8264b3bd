"""`dynamic_ntk`: dynamic NTK scaling, in the study's frozen form (default) or transformers' own.

Both rescale the RoPE base with NTK (eq. 9) for a t that grows with the sequence length:

* `variant=frozen` (controlled study, appendix 7.8, after Fu et al. 2024):
  t = s*max(C', C_test)/C - (s-1), with C the original length, C' the length the checkpoint was
  trained to (C' = C for an untouched model: the study's "NTK-Frozen") and C_test the length
  of the sequence at hand. Each sequence gets the base for its own length, fixed when it
  starts and kept while cached decoding continues it (rope/dynamic_update.py); below C' the
  base does not move. Our rope type `longmem_ntk_length_scaled`.
* `variant=hf`: transformers' `dynamic` rope type as it ships (its `factor` is our `s`):
  t = s*max(C, L)/C - (s-1) with L the largest length the rotary embedding has seen so far.
  It has no C' (it equals the frozen variant with C' = C only while the lengths never go
  down), keeps the largest length it has met (so a score depends on what ran before, until a
  sequence shorter than C resets it), and recomputes the base in the middle of cached
  decoding (so new keys and already cached keys use different bases).

`factor`/`target_length` only set how long an input the wrapper accepts."""

import dataclasses
from typing import Literal

from lm_eval_longmem.models.method_framework.rope_extension_family import RopeExtensionMethod, TargetArgs
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.rope.dynamic_update import install_length_scaled_update
from lm_eval_longmem.models.rope.parameters import (
    GLOBAL_LAYER_TYPE,
    is_per_layer_type,
    rope_parameters,
    set_rope_type,
)
from lm_eval_longmem.models.rope.rope_types import LENGTH_SCALED_NTK
from lm_eval_longmem.models.rope.rotation import rotary_embeddings, the_rotary_embedding

DEFAULT_S = 2.0


@dataclasses.dataclass(frozen=True)
class DynamicNTKArgs(TargetArgs):
    variant: Literal["frozen", "hf"] = dataclasses.field(
        default="frozen",
        metadata={
            "help": "frozen: the study's base frozen up to C' and set per sequence; hf: transformers' `dynamic` type"
        },
    )
    s: float = dataclasses.field(
        default=DEFAULT_S,
        metadata={
            "help": "scale hyperparameter s (paper: 2 for NTK-Frozen, C'/(2C) after fine-tuning; hf: its `factor`)"
        },
    )
    training_length: int | None = dataclasses.field(
        default=None,
        metadata={"help": "C', the length the checkpoint was trained to (default: C, untrained; frozen only)"},
    )

    def __post_init__(self):
        super().__post_init__()
        if self.s < 1:
            raise ValueError(f"s must be >= 1, got {self.s}")
        if self.training_length is not None and self.training_length < 1:  # 0 would silently mean C
            raise ValueError(f"training_length must be a positive number of tokens, got {self.training_length}")
        if self.variant == "hf" and self.training_length is not None:
            raise ValueError(
                "training_length (C') is a setting of variant=frozen; transformers' `dynamic` type "
                "(variant=hf) always rescales from the original length C"
            )
        if self.variant == "hf" and self.original_length is not None:
            raise ValueError(
                "variant=hf takes C from the config's max_position_embeddings (transformers' rule); "
                "original_length applies to variant=frozen only"
            )


class DynamicNTK(RopeExtensionMethod):
    name = "dynamic_ntk"
    summary = (
        "dynamic NTK: variant=frozen (default) t = s*max(C', C_test)/C - (s-1) per sequence; "
        "variant=hf transformers' `dynamic` rope type"
    )
    paper = "the study's appendix 7.8 (Fu et al. 2024)"
    docs_page = "methods/rope.md"
    # acting: the input (44) is longer than C = 32, so the base moves; neutral: shorter than C, it stays
    tiny_settings = TinySettings(acting={"original_length": 32}, neutral={"original_length": 64})
    Args = DynamicNTKArgs
    prefix_cache_reusable = False  # the base, hence every cached key, depends on the prompt's length

    def prepare_config(self, config) -> None:
        # Gemma 3: the frozen variant scales the global layers' table (as pi/ntk/yarn do); transformers'
        # own `dynamic` type (variant=hf) follows one `inv_freq` and is refused there
        rope_parameters(config, self.name, per_layer_type=self.args.variant == "frozen")
        original = self.original_length(config)
        if self.args.variant == "hf":
            # transformers reads C from max_position_embeddings; its `factor` plays the role of s
            set_rope_type(config, self.name, "dynamic", factor=self.args.s)
            return
        set_rope_type(
            config,
            self.name,
            LENGTH_SCALED_NTK,
            s=self.args.s,
            training_length=self.args.training_length or original,
            original_max_position_embeddings=original,
        )

    def resolved_args(self) -> dict:
        values = super().resolved_args()
        if self.args.variant == "frozen" and values.get("training_length") is None:
            values["training_length"] = self._original_length  # C' = C: the study's NTK-Frozen
        return values

    def prepare_model(self, model):
        if self.args.variant == "frozen":
            import torch

            config = model.config
            if is_per_layer_type(config, config.rope_parameters):
                name = f"{GLOBAL_LAYER_TYPE}_inv_freq"
                (rotary,) = [m for m in model.modules() if isinstance(getattr(m, name, None), torch.Tensor)]
                install_length_scaled_update(rotary, config, GLOBAL_LAYER_TYPE)
            else:
                install_length_scaled_update(the_rotary_embedding(model, self.name), config)
        else:
            for rotary in rotary_embeddings(model):
                rotary.register_forward_hook(_keep_the_longest_length)
        return model


def _keep_the_longest_length(rotary, args, output) -> None:
    """transformers 5.2's `dynamic_rope_update` stores the length it grew to (or reset to) under
    `None_max_seq_len_cached` (f"{layer_type}_..." with layer_type None) instead of
    `max_seq_len_cached`, so it never keeps the largest length seen: every sequence longer
    than C gets its own length's base. transformers 5.24 writes `max_seq_len_cached` (this hook
    then finds nothing to move). Moved after each call, variant=hf behaves as documented on both."""
    if "None_max_seq_len_cached" in rotary.__dict__:
        rotary.max_seq_len_cached = rotary.__dict__.pop("None_max_seq_len_cached")
