"""`ntk`: static NTK-aware RoPE scaling (bloc97 2023; controlled study eq. 9).

alpha_j = kappa^(-2j/d) with kappa = t^(d/(d-2)): the highest frequency is kept and the lowest
is divided by t, as PI would. transformers has no static NTK type (its `dynamic` is another
formula), so this uses our registered rope type `longmem_ntk`."""

from lm_eval_longmem.models.method_framework.rope_extension_family import RopeExtensionMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.rope.parameters import set_rope_type
from lm_eval_longmem.models.rope.rope_types import STATIC_NTK


class NTKAware(RopeExtensionMethod):
    name = "ntk"
    summary = "NTK-aware scaling: RoPE base b -> b * t^(d/(d-2)) (high frequencies kept, lowest / t)"
    paper = "the study's eq. 9"
    docs_page = "methods/rope.md"
    tiny_settings = TinySettings(acting={"factor": 2}, neutral={"factor": 1})

    def prepare_config(self, config) -> None:
        factor = self.factor_for(self.original_length(config))
        set_rope_type(config, self.name, STATIC_NTK, factor=factor)
