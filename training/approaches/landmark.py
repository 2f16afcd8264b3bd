"""`landmark`: Landmark Attention fine-tuning (Mohtashami & Jaggi 2023; the official `llama/train.py`).

The base model gets a `<landmark>` token (and a pad token if it has none), its new embedding rows
the mean of the old ones; every packed chunk of `seq_len` tokens gets a landmark after each
`block_size - 1` tokens and runs through the plugin's own landmark loop with the grouped softmax
and no retrieval (`landmark_causal_lm`), the loss over the augmented chunk. The export records the
study's layout keys (`mem_id`, `mem_freq`, `train_context_length` = seq_len,
`include_landmark_in_loss`) beside the method, so it loads with `method=landmark` and nothing else.
A landmark export given as the base model keeps its token (a second fine-tune, or a resumed run)."""

from __future__ import annotations

from ..errors import TrainingError
from .base import (
    Approach,
    TrainableModel,
    base_model_source,
    build_method,
    hub_errors_as_training_errors,
    load_tokenizer,
    save_recorded_checkpoint,
)


class LandmarkAttention(Approach):
    name = "landmark"
    summary = "Landmark Attention fine-tuning: a <landmark> token per block, grouped softmax (method=landmark)"

    def check(self, recipe):
        if recipe.method != "landmark":
            raise TrainingError("approach=landmark needs method=landmark (its arguments in method_args).")
        if recipe.gradient_checkpointing:
            raise TrainingError("approach=landmark runs its own landmark loop: set gradient_checkpointing=false.")
        args = build_method(recipe).args
        if args.train_context_length is not None and args.train_context_length != recipe.seq_len:
            raise TrainingError(
                f"method_args.train_context_length ({args.train_context_length}) must equal seq_len "
                f"({recipe.seq_len}): the chunks trained on are the training length the windows are sized by."
            )
        block = args.block_size or _method_defaults().STUDY_BLOCK_SIZE
        if recipe.seq_len < block:
            raise TrainingError(f"seq_len ({recipe.seq_len}) must hold at least one block of block_size={block}.")

    def build(self, recipe):
        from transformers import AutoConfig, AutoModelForCausalLM

        from lm_eval_longmem.models.landmark.checkpoint import LANDMARK_ID_KEY, record_layout
        from lm_eval_longmem.models.landmark.tokens import add_landmark_token

        from ..modeling.landmark_causal_lm import LandmarkCausalLM

        source = base_model_source(recipe)
        method = build_method(recipe)
        with hub_errors_as_training_errors(source):
            config = AutoConfig.from_pretrained(source)
            for name, value in recipe.model_config.items():
                setattr(config, name, value)
            model = AutoModelForCausalLM.from_pretrained(source, config=config, dtype="float32")
        tokenizer = load_tokenizer(recipe, source)
        landmark_id = getattr(model.config, LANDMARK_ID_KEY, None)
        if landmark_id is None:
            landmark_id = add_landmark_token(model, tokenizer)
        args = method.args
        block = args.block_size or _method_defaults().STUDY_BLOCK_SIZE
        in_loss = True if args.landmark_in_loss is None else args.landmark_in_loss
        record_layout(model.config, landmark_id, block, recipe.seq_len, in_loss)
        model = method.prepare_model(model)  # reads the layout just recorded; refuses unsupported models
        wrapped = LandmarkCausalLM(model, landmark_id, block, in_loss)
        return TrainableModel(model=wrapped, tokenizer=tokenizer, method=method, extras={"causal_lm": model})

    def export(self, trainable, model, directory, run_record, state_dict=None) -> None:
        save_recorded_checkpoint(model.model, trainable.tokenizer, directory, trainable.method, run_record)


def _method_defaults():
    from lm_eval_longmem.models.methods import landmark

    return landmark
