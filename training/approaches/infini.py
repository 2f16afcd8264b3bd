"""`infini`: Infini-attention continual pretraining (Munkhdalai et al. 2024, §3.2).

The model runs through the plugin's own segment loop (`models/compressive_memory`: local attention
per segment, a float32 compressive memory across segments, one gate per head), the very code that
evaluates it, with gradients through the memory across segments (`segmented_causal_lm`). The new gates get their own
learning rate (`gate_lr`) and no weight decay: Hugging Face's reproduction saw them stay at their
initial value otherwise. The export is `save_infini_checkpoint`'s (weights + gates file, the
method's arguments recorded). The paper's passkey fine-tune is a second run from that export
with `data=passkey` (recipe infini-passkey)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TrainingError
from ..recipes.key import key
from ..recipes.key_checks import POSITIVE
from .base import TRAINING_RECORD_KEY, Approach, build_method, load_pretrained


@dataclass
class InfiniKeys:
    gate_lr: float = key(0.01, "learning rate of the new gates (no weight decay)", "infini", POSITIVE)


class InfiniAttention(Approach):
    name = "infini"
    summary = "Infini-attention continual pretraining through the plugin's own segment loop (method=infini)"
    Keys = InfiniKeys

    def check(self, recipe):
        if recipe.method != "infini":
            raise TrainingError("approach=infini needs method=infini (its arguments in method_args).")
        if recipe.gradient_checkpointing:
            raise TrainingError("approach=infini runs its own segment loop: set gradient_checkpointing=false.")
        args = build_method(recipe).args
        if recipe.seq_len <= args.segment_length:
            raise TrainingError(
                f"seq_len ({recipe.seq_len}) must exceed method_args.segment_length ({args.segment_length}): "
                "with a single segment the memory is never read and the gates never learn."
            )

    def build(self, recipe):
        from ..modeling.segmented_causal_lm import SegmentedCausalLM

        trainable = load_pretrained(recipe)  # prepare_model attaches the gates (trained ones from an Infini export)
        args = trainable.method.args
        trainable.extras = {"causal_lm": trainable.model}
        trainable.model = SegmentedCausalLM(trainable.model, args.segment_length, args.update)
        return trainable

    def param_groups(self, trainable, recipe):
        gate_ids = {id(p) for p in trainable.extras["causal_lm"].infini_gates.parameters()}
        params = [p for p in trainable.model.parameters() if p.requires_grad]
        return [
            {
                "params": [p for p in params if id(p) not in gate_ids],
                "lr": recipe.lr,
                "weight_decay": recipe.weight_decay,
            },
            {"params": [p for p in params if id(p) in gate_ids], "lr": recipe.gate_lr, "weight_decay": 0.0},
        ]

    def export(self, trainable, model, directory, run_record, state_dict=None) -> None:
        from lm_eval_longmem.models.compressive_memory import save_infini_checkpoint

        causal_lm = model.model
        setattr(causal_lm.config, TRAINING_RECORD_KEY, run_record)
        save_infini_checkpoint(causal_lm, directory, trainable.method.args, trainable.tokenizer)
