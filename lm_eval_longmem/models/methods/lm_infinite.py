"""`lm_infinite`: LM-Infinite (Han et al. 2023; controlled study §3.3, appendix 7.8).

Training-free: each query attends to the first G tokens and to a local window of the M most
recent ones, and relative distances are clamped to the training length C (min(n - m, C)).
The attention is computed in two parts (models/attention/lm_infinite.py); cost grows as
C' * (M + G) rather than C'^2."""

import dataclasses

from lm_eval_longmem.models.attention.install import install
from lm_eval_longmem.models.attention.lm_infinite import LMInfiniteRule
from lm_eval_longmem.models.method_framework.rope_extension_family import RopeExtensionMethod, TargetArgs
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.rope.parameters import rope_parameters


@dataclasses.dataclass(frozen=True)
class LMInfiniteArgs(TargetArgs):
    global_tokens: int = dataclasses.field(
        default=10, metadata={"help": "global memory G: first tokens every query sees"}
    )
    local_window: int | None = dataclasses.field(
        default=None, metadata={"help": "local window M (default: the training length C; paper: 4096 on LLaMA-2)"}
    )

    def __post_init__(self):
        super().__post_init__()
        if self.global_tokens < 0 or (self.local_window is not None and self.local_window < 1):
            raise ValueError(
                f"need global_tokens >= 0 and local_window >= 1, got {self.global_tokens}, {self.local_window}"
            )


class LMInfinite(RopeExtensionMethod):
    name = "lm_infinite"
    summary = "LM-Infinite: G global tokens + local window M, distances clamped to the training length C"
    paper = "LM-Infinite (Han et al. 2023)"
    docs_page = "methods/rope.md"
    tiny_settings = TinySettings(
        acting={"global_tokens": 2, "local_window": 16}, neutral={"global_tokens": 2, "local_window": 64}
    )
    Args = LMInfiniteArgs

    def prepare_config(self, config) -> None:
        rope_parameters(config, self.name)  # Gemma 3: the global layers' (the rule runs there)
        self.original_length(config)

    def prepare_model(self, model):
        clamp = self._original_length or self.original_length(model.config)
        rule = LMInfiniteRule(
            global_tokens=self.args.global_tokens, window=self.args.local_window or clamp, clamp=clamp
        )
        return install(model, rule, self.name)

    def resolved_args(self) -> dict:
        values = super().resolved_args()
        if values.get("local_window") is None:
            values["local_window"] = self._original_length  # M defaults to C
        return values
