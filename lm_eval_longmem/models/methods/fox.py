"""`fox`: run a Forgetting Transformer checkpoint (Lin et al., 2025) as it was trained.

FoX is an architecture (`models/fox/`), not a patch: the forget gate
f_t = sigmoid(w_f . x_t + b_f) down-weights attention logits by sum_{l=j+1..i} log f_l and is
part of the trained weights. This method only checks that the checkpoint is FoX-family and
records which FoX it is: its switches and their name (`architecture=fox-pro`,
`transformer-pro`, ..., see fox_architecture.py), so that a Transformer baseline trained in the
FoX code never reads as FoX (`checkpoint_identity`). A FoX checkpoint selects this method by
itself when `method=` is left out. Reports ask for the architecture without torch, so this
module imports nothing heavy.
"""

from __future__ import annotations

from typing import Any

from lm_eval_longmem.models.checkpoint.fox_architecture import ARCHITECTURE_KEY, architecture_arguments
from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings

# The config switches that tell the FoX variants apart (LLaMA vs Pro, gate type, the
# Transformer baselines), recorded in the results so runs of different variants are told apart.
ARCHITECTURE_SWITCHES = (
    "fgate_type",
    "use_rope",
    "use_output_gate",
    "use_output_norm",
    "qk_norm",
    "use_k_shift",
    "use_v_shift",
    "hidden_size",
    "num_hidden_layers",
    "num_heads",
    "num_kv_heads",
)


class ForgettingTransformer(LongMemMethod):
    name = "fox"
    summary = "Forgetting Transformer checkpoint as trained (selected by itself for one; an architecture, not a patch)"
    paper = "Lin et al., ICLR 2025, *Forgetting Transformer*"
    docs_page = "methods/fox.md"
    # runs the tiny FoX checkpoint as trained
    tiny_settings = TinySettings(acting={}, neutral={})
    needs_fox_checkpoint = True
    leaves_model_as_trained = True

    def __init__(self, args=None):
        super().__init__(args)
        self.architecture: dict[str, Any] = {}

    @classmethod
    def checkpoint_identity(cls, config) -> dict[str, Any]:
        """The checkpoint's FoX-family architecture by name (`architecture=transformer-pro`, ...)
        and any switch that differs from it: from a config or from the switches `describe()` records."""
        return architecture_arguments(config)

    def prepare_config(self, config) -> None:
        # The wrapper has already checked that the checkpoint is FoX-family (`check_method_fits`).
        self.architecture = {key: getattr(config, key) for key in ARCHITECTURE_SWITCHES if hasattr(config, key)}
        self.architecture["model_type"] = config.model_type
        self.architecture[ARCHITECTURE_KEY] = architecture_arguments(config)[ARCHITECTURE_KEY]

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "args": dict(self.architecture)}
