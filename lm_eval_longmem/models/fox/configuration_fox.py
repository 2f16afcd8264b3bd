"""Configuration of the Forgetting Transformer (FoX) and of the project's Transformer baselines.

The keys, their defaults and the `model_type` strings are those of the official code
(`zhixuan-lin/forgetting-transformer`, `model/forgetting_transformer/configuration_*.py` and
`model/transformer/configuration_transformer.py`), so the released checkpoints' `config.json`
files load unchanged. Values the official code would only `assert` on are checked here with
errors that say what is allowed.
"""

from __future__ import annotations

from transformers import PretrainedConfig
from transformers.utils import logging

logger = logging.get_logger(__name__)

FGATE_TYPES = ("full", "bias_only", "fixed", "none")
OGATE_ACTIVATIONS = ("sigmoid", "silu")
MLP_ACTIVATIONS = ("swish", "silu", "sigmoid")
# Options that only choose a fused GPU kernel in the official code; the math is the same here.
FUSED_KERNEL_OPTIONS = ("fuse_norm", "fuse_cross_entropy")


class ForgettingTransformerConfig(PretrainedConfig):
    """FoX (and, with `fgate_type="none"` + `use_rope=True`, the Transformer (Pro) baseline)."""

    model_type = "forgetting_transformer-project_fox"
    keys_to_ignore_at_inference = ["past_key_values"]
    attribute_map = {"num_attention_heads": "num_heads"}

    def __init__(
        self,
        vocab_size: int = 32000,
        hidden_size: int = 2048,
        hidden_ratio: float | None = 4,
        intermediate_size: int | None = None,
        num_hidden_layers: int = 24,
        num_heads: int = 32,
        num_kv_heads: int | None = None,
        hidden_act: str = "swish",
        window_size: int | None = None,
        max_position_embeddings: int | None = 2048,
        initializer_range: float = 0.02,
        elementwise_affine: bool | None = True,
        norm_eps: float = 1e-6,
        use_cache: bool = True,
        pad_token_id: int | None = None,
        bos_token_id: int | None = 1,
        eos_token_id: int | None = 2,
        tie_word_embeddings: bool = False,
        attention_bias: bool = False,
        fuse_norm: bool = True,
        fuse_cross_entropy: bool = True,
        rope_base: float = 500000.0,
        use_rope: bool = False,
        use_output_gate: bool = False,
        ogate_act: str = "sigmoid",
        fgate_type: str = "full",
        fgate_bias_init: bool = False,
        decay_time_min: float | None = None,
        decay_time_max: float | None = None,
        use_output_norm: bool = False,
        qk_norm: bool = False,
        qk_norm_share_param_across_head: bool = False,
        use_k_shift: bool = False,
        use_v_shift: bool = False,
        log_pruning_tolerance: float | None = None,
        **kwargs,
    ):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.hidden_ratio = hidden_ratio
        self.intermediate_size = intermediate_size
        self.num_hidden_layers = num_hidden_layers
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.hidden_act = hidden_act
        self.window_size = window_size
        self.max_position_embeddings = max_position_embeddings
        self.initializer_range = initializer_range
        self.elementwise_affine = elementwise_affine
        self.norm_eps = norm_eps
        self.use_cache = use_cache
        self.attention_bias = attention_bias
        self.fuse_norm = fuse_norm
        self.fuse_cross_entropy = fuse_cross_entropy
        self.rope_base = rope_base
        self.use_rope = use_rope
        self.use_output_gate = use_output_gate
        self.ogate_act = ogate_act
        self.fgate_type = fgate_type
        self.fgate_bias_init = fgate_bias_init
        self.decay_time_min = decay_time_min
        self.decay_time_max = decay_time_max
        self.use_output_norm = use_output_norm
        self.qk_norm = qk_norm
        self.qk_norm_share_param_across_head = qk_norm_share_param_across_head
        self.use_k_shift = use_k_shift
        self.use_v_shift = use_v_shift
        # The official kernel skips blocks whose decay makes them negligible (adaptive computation
        # pruning). It is a speed option: recorded, while attention here is always computed exactly.
        self.log_pruning_tolerance = log_pruning_tolerance
        self._validate()
        super().__init__(
            pad_token_id=pad_token_id,
            bos_token_id=bos_token_id,
            eos_token_id=eos_token_id,
            tie_word_embeddings=tie_word_embeddings,
            **kwargs,
        )

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def mlp_width(self) -> int:
        """The SwiGLU width: `intermediate_size`, else 2/3 * hidden * ratio rounded up to 256."""
        if self.intermediate_size is not None:
            return self.intermediate_size
        ratio = 4 if self.hidden_ratio is None else self.hidden_ratio
        width = int(self.hidden_size * ratio * 2 / 3)
        return 256 * ((width + 255) // 256)

    def _validate(self) -> None:
        def choose(name: str, value, allowed) -> None:
            if value not in allowed:
                raise ValueError(f"{name}={value!r} is not supported; valid values: {', '.join(map(repr, allowed))}")

        choose("fgate_type", self.fgate_type, FGATE_TYPES)
        choose("ogate_act", self.ogate_act, OGATE_ACTIVATIONS)
        choose("hidden_act", self.hidden_act, MLP_ACTIVATIONS)
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size ({self.hidden_size}) must be a multiple of num_heads ({self.num_heads})")
        if self.num_kv_heads not in (None, self.num_heads):
            raise ValueError(
                f"num_kv_heads={self.num_kv_heads}: FoX keeps one key/value head per query head (the official "
                "model has no grouped-query attention); leave it None"
            )
        if self.window_size is not None:
            raise ValueError(
                f"window_size={self.window_size}: sliding-window attention is not part of FoX (the official layer "
                "ignores it too); leave it None"
            )
        if self.use_output_norm and self.use_output_gate and self.ogate_act != "sigmoid":
            raise ValueError(
                "the output norm fuses a sigmoid output gate: use ogate_act='sigmoid' with use_output_norm"
            )
        self._validate_gate_init()
        enabled = [name for name in FUSED_KERNEL_OPTIONS if getattr(self, name)]
        if enabled:
            logger.warning_once(
                f"{', '.join(enabled)} only select fused GPU kernels in the official FoX code; this implementation "
                "computes the same functions in PyTorch and ignores them."
            )

    def _validate_gate_init(self) -> None:
        decay_times = (self.decay_time_min, self.decay_time_max)
        if self.fgate_bias_init:
            if self.fgate_type not in ("bias_only", "fixed"):
                raise ValueError(
                    f"fgate_bias_init=True initialises data-independent gates: it needs fgate_type 'bias_only' or "
                    f"'fixed', not {self.fgate_type!r}"
                )
            if None in decay_times or min(decay_times) <= 0:
                raise ValueError(
                    f"fgate_bias_init=True needs positive decay_time_min and decay_time_max, got {decay_times}"
                )
        else:
            if self.fgate_type == "fixed":
                raise ValueError("fgate_type='fixed' needs fgate_bias_init=True (and decay_time_min/max)")
            if decay_times != (None, None):
                raise ValueError("decay_time_min/max are only used with fgate_bias_init=True; leave them None")


class TransformerBaselineConfig(ForgettingTransformerConfig):
    """The official repository's separate `transformer-project_fox` type (Transformer (LLaMA)).

    Its parameters have the same names as FoX's without a forget gate, so it runs on the same
    modules: defaults are RoPE on and no forget gate, as in the official `TransformerConfig`.
    """

    model_type = "transformer-project_fox"

    def __init__(self, use_rope: bool = True, fgate_type: str = "none", **kwargs):
        super().__init__(use_rope=use_rope, fgate_type=fgate_type, **kwargs)


FOX_MODEL_TYPES = (ForgettingTransformerConfig.model_type, TransformerBaselineConfig.model_type)


def is_fox_config(config) -> bool:
    """Whether a transformers config describes one of the models of this package."""
    return getattr(config, "model_type", None) in FOX_MODEL_TYPES
