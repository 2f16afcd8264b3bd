"""`pi`: Position Interpolation (Chen et al. 2023; controlled study eq. 8), alpha_j = 1/t.

transformers' native `linear` rope type does exactly this, so the method only sets it."""

from lm_eval_longmem.models.method_framework.rope_extension_family import RopeExtensionMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.rope.parameters import set_rope_type


class PositionInterpolation(RopeExtensionMethod):
    name = "pi"
    summary = "Position Interpolation: every RoPE frequency divided by t = C'/C (rope_type linear)"
    paper = "Chen et al. 2023 (Position Interpolation); the study's eq. 8"
    docs_page = "methods/rope.md"
    tiny_settings = TinySettings(acting={"factor": 2}, neutral={"factor": 1})

    def prepare_config(self, config) -> None:
        factor = self.factor_for(self.original_length(config))
        set_rope_type(config, self.name, "linear", factor=factor)
