"""`clex`: CLEX, continuous length extrapolation (Chen et al., ICLR 2024; controlled study §3).

RoPE's log-frequencies follow a learned neural ODE over the length factor t,
dz/dt = act((z + xi(t)) U) D + xi'(t), z(1) = ln theta (`models/clex/frequency_field.py`), and a
sequence of L tokens uses theta_t = exp(z(t)) with t = ceil(L / C), up to `max_factor`. With
D = 0 (no trained ODE) that is NTK-aware scaling with factor 2t - 1. Keys are cached before RoPE
and rotated with the current theta_t (`models/clex/attention.py`), and generation encodes the
sequence again when t grows (`models/clex/generator.py`), so decoding equals teacher forcing.
The machinery is `models/clex/`; this file declares the arguments, reads the checkpoint's
settings and hooks it in.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Literal

from lm_eval_longmem.models.clex.config_format import clex_rope_settings
from lm_eval_longmem.models.clex.load_report import drop_clex_rope_validation_message
from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.rope.parameters import original_length, rope_parameters, set_rope_type

logger = logging.getLogger(__name__)
drop_clex_rope_validation_message()  # transformers' "no validation for rope_type 'clex'": method=clex answers it

# The authors' defaults (their released 16K model and training scripts: max factor 16, lambda 1,
# SiLU, step 0.01); log-scaling only where a checkpoint asks for it.
PAPER_DEFAULTS: dict[str, Any] = {
    "max_factor": 16,
    "param_factor": 1,
    "act": "silu",
    "time_dt": 0.01,
    "log_scale": False,
}
LARGEST_FACTOR = 1024  # t beyond this solves an ODE over 10^5 steps and more: a typo, not a setting


@dataclasses.dataclass(frozen=True)
class ClexArgs:
    max_factor: int | None = dataclasses.field(
        default=None,
        metadata={"help": "largest t: inputs up to C x max_factor (default: the checkpoint's, else 16)"},
    )
    param_factor: int | None = dataclasses.field(
        default=None, metadata={"help": "lambda: the ODE's hidden width is lambda x d (default: checkpoint's, else 1)"}
    )
    act: Literal["silu", "tanh"] | None = dataclasses.field(
        default=None, metadata={"help": "the ODE's activation (default: the checkpoint's, else silu)"}
    )
    time_dt: float | None = dataclasses.field(
        default=None, metadata={"help": "RK4 step size in t (default: the checkpoint's, else 0.01)"}
    )
    original_length: int | None = dataclasses.field(
        default=None, metadata={"help": "base length C (default: the checkpoint's max_position_embeddings)"}
    )
    log_scale: bool | None = dataclasses.field(
        default=None,
        metadata={"help": "scale queries by ln(n)/ln(C) at length n (default: the checkpoint's, else false)"},
    )

    def __post_init__(self):
        if self.max_factor is not None and not 1 <= self.max_factor <= LARGEST_FACTOR:
            raise ValueError(f"max_factor must be an integer t from 1 to {LARGEST_FACTOR}, got {self.max_factor}")
        if self.param_factor is not None and self.param_factor < 1:
            raise ValueError(f"param_factor (the ODE's width multiplier) must be >= 1, got {self.param_factor}")
        if self.time_dt is not None and not 0 < self.time_dt <= 1:
            raise ValueError(f"time_dt (the ODE's step in t) must be in (0, 1], got {self.time_dt}")
        if self.original_length is not None and self.original_length < 1:
            raise ValueError(f"original_length must be a positive number of tokens, got {self.original_length}")


class Clex(LongMemMethod):
    name = "clex"
    summary = "CLEX: RoPE frequencies from a learned ODE over the length factor t = ceil(L/C), up to max_factor"
    paper = "CLEX (Chen et al., ICLR 2024); the study's §3"
    docs_page = "methods/rope.md#clex"
    # acting: 44 tokens give t = 3 on the untrained ODE (NTK with factor 5); neutral: t = 1, the model's own RoPE
    tiny_settings = TinySettings(acting={"original_length": 16, "max_factor": 4}, neutral={"original_length": 64})
    Args = ClexArgs
    rewrites_rope = True
    checkpoint_mechanism = "RoPE frequencies from its trained ODE (rope_scaling of type clex)"
    checkpoint_needs_this_method = True  # transformers has no `clex` rope type: KeyError: 'clex'
    # a prompt is encoded at the t of its own length: a shorter prompt's cache was encoded at another t
    prefix_cache_reusable = False

    def __init__(self, args=None):
        super().__init__(args)
        self._checkpoint: dict[str, Any] = {}
        self._original_length: int | None = None
        self._clex = None
        self.rope_theta: float | None = None

    def setting(self, name: str):
        """An argument as this run uses it: given, else the checkpoint's, else the paper's default."""
        given = getattr(self.args, name)
        if given is not None:
            return given
        return self._checkpoint.get(name, PAPER_DEFAULTS[name])

    def prepare_config(self, config) -> None:
        self._checkpoint = clex_rope_settings(config) or {}
        if self._checkpoint:  # transformers cannot build a `clex` rope type: plain RoPE, the ODE applied by us
            set_rope_type(config, self.name, "default")
        # refuses a model without (one table of) RoPE; rope_theta is kept for the export's config
        self.rope_theta = float(rope_parameters(config, self.name, per_layer_type=False)["rope_theta"])
        self._original_length = original_length(config, self.name, self.args.original_length)

    def loading_context(self):
        from lm_eval_longmem.models.clex.load_report import quiet_clex_loading

        return quiet_clex_loading()

    def prepare_model(self, model):
        from lm_eval_longmem.models.clex.attention import install_clex_attention
        from lm_eval_longmem.models.clex.checkpoint import attach_clex, load_clex_weights
        from lm_eval_longmem.models.clex.scaling import ClexScaling
        from lm_eval_longmem.models.rope.rotation import the_rotary_embedding

        rotary = the_rotary_embedding(model, self.name)
        clex = ClexScaling(
            rotary.inv_freq,
            self._original_length,
            self.setting("max_factor"),
            self.setting("param_factor"),
            self.setting("act"),
            self.setting("time_dt"),
        )
        trained = load_clex_weights(clex, getattr(model, "name_or_path", None), self.setting("param_factor"))
        attach_clex(model, clex)
        install_clex_attention(model, clex, self.setting("log_scale"))
        self._clex = clex
        if not trained:
            logger.warning(
                "method=clex: %s has no trained CLEX ODE weights (clex_layer.proj_func.*), so its ODE starts "
                "untrained (D = 0): that is NTK-aware scaling with factor 2t-1, t = ceil(L/%d), until the ODE is "
                "trained (`lm-eval-longmem train`, approach clex).",
                getattr(model, "name_or_path", "the model") or "the model",
                self._original_length,
            )
        return model

    def make_generator(self, model, tokenizer):
        from lm_eval_longmem.models.clex.generator import ClexGenerator

        return ClexGenerator(model, self._clex, tokenizer)

    def resolved_args(self) -> dict:
        values = super().resolved_args()
        for name in PAPER_DEFAULTS:
            values[name] = self.setting(name)
        if self._original_length is not None:
            values["original_length"] = self._original_length
        return values

    def run_record(self) -> dict[str, Any]:
        if self._clex is None:
            return {}
        return {"factors_used": sorted(self._clex.factors_used)}

    def read_lengths(self, config) -> None:
        if not self._checkpoint:
            self._checkpoint = clex_rope_settings(config) or {}
        if self._original_length is None and self.args.original_length is None:
            try:
                self._original_length = original_length(config, self.name)
            except Exception:  # noqa: BLE001  (no RoPE: prepare_config refuses it with the reason)
                self._original_length = None

    @property
    def base_length(self) -> int | None:
        """C as this run uses it (given, else the checkpoint's), once the config has been read."""
        return self.args.original_length or self._original_length

    def trained_length(self, base_length: int) -> int:
        return self.base_length or base_length

    def input_limit(self, base_length: int) -> int | None:
        """Past C x max_factor there is no theta_t: the ODE is solved up to max_factor only."""
        return self.trained_length(base_length) * self.setting("max_factor")

    def context_length(self, base_length: int) -> int:
        return self.input_limit(base_length)
