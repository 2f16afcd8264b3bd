"""Forgetting Transformer (FoX) as a transformers model package.

Loads the official checkpoints `zhixuan-lin/{fox-pro,transformer-pro,fox-llama,transformer-llama}-
760m-longcrawl64-48b` unchanged and generates on transformers 5. Importing this package registers
both official model types with the Auto classes (`register_fox`).
"""

from __future__ import annotations

from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer
from transformers.models.auto import tokenization_auto

from .cache_fox import ForgettingAttentionCacheLayer, ForgettingTransformerCache, as_fox_cache
from .configuration_fox import (
    FGATE_TYPES,
    FOX_MODEL_TYPES,
    ForgettingTransformerConfig,
    TransformerBaselineConfig,
    is_fox_config,
)
from .json_gpt2_tokenizer import JSONGPT2Tokenizer
from .modeling_fox import (
    ForgettingTransformerForCausalLM,
    ForgettingTransformerModel,
    TransformerBaselineForCausalLM,
    TransformerBaselineModel,
)


def register_fox() -> None:
    """Register both official model types with AutoConfig/AutoModel/AutoModelForCausalLM, and
    the released checkpoints' tokenizer class (`JSONGPT2Tokenizer`, found by the name their
    tokenizer_config.json records) with AutoTokenizer.

    Idempotent; takes over the names if the official package registered its own classes first
    (these load the same checkpoints).
    """
    variants = (
        (ForgettingTransformerConfig, ForgettingTransformerModel, ForgettingTransformerForCausalLM),
        (TransformerBaselineConfig, TransformerBaselineModel, TransformerBaselineForCausalLM),
    )
    for config_class, model_class, causal_lm_class in variants:
        AutoConfig.register(config_class.model_type, config_class, exist_ok=True)
        AutoModel.register(config_class, model_class, exist_ok=True)
        AutoModelForCausalLM.register(config_class, causal_lm_class, exist_ok=True)
        AutoTokenizer.register(config_class, tokenizer_class=JSONGPT2Tokenizer, exist_ok=True)
        # transformers 5.2's AutoTokenizer returns a plain `TokenizersBackend` when the
        # checkpoint's tokenizer_class differs from TOKENIZER_MAPPING_NAMES[model_type], a table
        # `register` does not fill (5.24 consults the registered class). Naming ours there
        # makes both load JSONGPT2Tokenizer.
        tokenization_auto.TOKENIZER_MAPPING_NAMES.setdefault(config_class.model_type, JSONGPT2Tokenizer.__name__)


register_fox()

__all__ = [
    "FGATE_TYPES",
    "FOX_MODEL_TYPES",
    "ForgettingAttentionCacheLayer",
    "ForgettingTransformerCache",
    "ForgettingTransformerConfig",
    "ForgettingTransformerForCausalLM",
    "ForgettingTransformerModel",
    "JSONGPT2Tokenizer",
    "TransformerBaselineConfig",
    "TransformerBaselineForCausalLM",
    "TransformerBaselineModel",
    "as_fox_cache",
    "is_fox_config",
    "register_fox",
]
