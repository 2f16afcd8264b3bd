"""`from_scratch`: a new model from a config (FoX and the Transformer of matched size, as the FoX
paper compares them), randomly initialized with the recipe's seed.

`model_config` holds the whole architecture with its `model_type`; the FoX types are registered
by importing `lm_eval_longmem.models.fox`. The tokenizer is the recipe's (default: the embedded
SmolLM2's), and the vocabulary and special tokens follow it. As in the FoX paper, weight decay
skips norms and biases (every parameter with fewer than two dimensions)."""

from __future__ import annotations

from ..errors import TrainingError
from ..recipes.config_fields import check_config_fields
from .base import (
    Approach,
    TrainableModel,
    base_model_source,
    build_method,
    load_tokenizer,
)


class FromScratch(Approach):
    name = "from_scratch"
    summary = "A new model, randomly initialized, whose whole architecture model_config gives (FoX, the Transformer)"
    starts_from_base_model = False  # model_config is checked here, against its model type's defaults

    def check(self, recipe):
        from transformers import CONFIG_MAPPING

        import lm_eval_longmem.models.fox  # noqa: F401  (registers the FoX model types)

        model_type = recipe.model_config.get("model_type")
        if not model_type:
            raise TrainingError("approach=from_scratch needs model_config.model_type (and the architecture's fields).")
        if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
            from lm_eval_longmem.common.suggestions import did_you_mean

            raise TrainingError(
                f"model_config.model_type={model_type} is not a model type transformers knows."
                f"{did_you_mean(str(model_type), CONFIG_MAPPING.keys())}"
            )
        fields = {k: v for k, v in recipe.model_config.items() if k != "model_type"}
        check_config_fields(CONFIG_MAPPING[model_type](), fields, f"the {model_type} default")
        super().check(recipe)

    def build(self, recipe):
        from transformers import AutoConfig, AutoModelForCausalLM

        fields = dict(recipe.model_config)
        model_type = fields.pop("model_type")
        # The embedded default model is looked up only when the recipe names no tokenizer (a GPU node
        # without it can still train with tokenizer=<dir>).
        tokenizer = load_tokenizer(recipe, recipe.tokenizer or base_model_source(recipe))
        fields.setdefault("vocab_size", len(tokenizer))
        fields.setdefault("max_position_embeddings", recipe.seq_len)
        for name in ("bos_token_id", "eos_token_id", "pad_token_id"):
            fields.setdefault(name, getattr(tokenizer, name))
        try:
            config = AutoConfig.for_model(model_type, **fields)
        except (ValueError, TypeError) as err:
            raise TrainingError(f"model_config: {err}") from None
        try:
            model = AutoModelForCausalLM.from_config(config, dtype="float32")
        except (TypeError, ValueError, RuntimeError) as err:
            raise TrainingError(
                f"model_config: the model cannot be built with it ({type(err).__name__}: {err})."
            ) from None
        return TrainableModel(model=model, tokenizer=tokenizer, method=build_method(recipe))

    def param_groups(self, trainable, recipe):
        params = [(n, p) for n, p in trainable.model.named_parameters() if p.requires_grad]
        decayed = [p for _, p in params if p.ndim >= 2]
        kept = [p for _, p in params if p.ndim < 2]
        return [
            {"params": decayed, "lr": recipe.lr, "weight_decay": recipe.weight_decay},
            {"params": kept, "lr": recipe.lr, "weight_decay": 0.0},
        ]
