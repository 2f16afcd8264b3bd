"""`longlora`: LongLoRA (Chen et al. 2024) on a RoPE-extended model.

LoRA adapters (r 8, alpha 16) on q/k/v/o; embeddings and norms trained in full (without them
LoRA does not adapt to long contexts, LongLoRA Table 2); S2-Attn while training only. The export
holds the merged model (what `--model longmem` loads), and in `adapter/` the PEFT adapter plus
`trainable_extras.safetensors` (the trained embeddings and norms), which together rebuild it
from the base model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import TrainingError
from ..recipes.key import key
from ..recipes.key_checks import AT_LEAST_ONE, BELOW_ONE, NOT_EMPTY, Range
from .base import Approach, load_pretrained, save_recorded_checkpoint

ADAPTER_DIR = "adapter"
EXTRAS_FILE = "trainable_extras.safetensors"


@dataclass
class LongLoRAKeys:
    lora_r: int = key(8, "LoRA rank", "longlora", AT_LEAST_ONE)
    lora_alpha: int = key(16, "LoRA alpha", "longlora", AT_LEAST_ONE)
    lora_dropout: float = key(0.0, "LoRA dropout", "longlora", BELOW_ONE)
    lora_targets: tuple[str, ...] = key(
        ("q_proj", "k_proj", "v_proj", "o_proj"), "modules given LoRA adapters", "longlora", NOT_EMPTY
    )
    trainable_extras: tuple[str, ...] = key(
        ("embed", "norm"), "parameters trained in full beside LoRA (names containing these)", "longlora", NOT_EMPTY
    )
    s2_attention: bool = key(True, "shifted sparse attention while training (never in the export)", "longlora")
    s2_group_fraction: float = key(
        0.25, "S2 group size as a fraction of seq_len", "longlora", Range(0, 1, low_open=True)
    )


class LongLoRA(Approach):
    name = "longlora"
    summary = "LongLoRA: LoRA adapters, embeddings and norms trained in full, shifted sparse attention while training"
    Keys = LongLoRAKeys

    def check(self, recipe):
        if recipe.s2_attention:
            group = s2_group_size(recipe)
            if group < 2 or recipe.seq_len % group:
                raise TrainingError(
                    f"S2-attention needs seq_len ({recipe.seq_len}) to be a multiple of its group size "
                    f"({group} = s2_group_fraction {recipe.s2_group_fraction} x seq_len) and the group >= 2."
                )
        if not recipe.method:
            raise TrainingError("approach=longlora needs method= (the study extends LongLoRA with pi: method=pi).")
        super().check(recipe)

    def build(self, recipe):
        from peft import LoraConfig, get_peft_model

        from ..modeling.s2_attention import enable_s2_attention

        trainable = load_pretrained(recipe)
        attention_implementation = trainable.model.config._attn_implementation
        if recipe.s2_attention:
            enable_s2_attention(trainable.model, s2_group_size(recipe))
        lora = LoraConfig(
            r=recipe.lora_r,
            lora_alpha=recipe.lora_alpha,
            lora_dropout=recipe.lora_dropout,
            target_modules=list(recipe.lora_targets),
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(trainable.model, lora)
        extras = unfreeze_extras(model, recipe.trainable_extras)
        if not extras:
            raise TrainingError(f"trainable_extras={list(recipe.trainable_extras)} matches no parameter of the model.")
        trainable.model = model
        trainable.extras = {"extra_names": extras, "attn_implementation": attention_implementation}
        return trainable

    def export(self, trainable, model, directory: Path, run_record: dict, state_dict=None) -> None:
        from safetensors.torch import save_file

        adapter_dir = directory / ADAPTER_DIR
        model.save_pretrained(adapter_dir)
        names = set(trainable.extras["extra_names"])
        extras = {n: p.detach().contiguous().cpu() for n, p in model.named_parameters() if n in names}
        save_file(extras, str(adapter_dir / EXTRAS_FILE))
        merged = model.merge_and_unload()
        merged.set_attn_implementation(trainable.extras["attn_implementation"] or "sdpa")
        save_recorded_checkpoint(merged, trainable.tokenizer, directory, trainable.method, run_record)


def s2_group_size(recipe) -> int:
    return int(round(recipe.seq_len * recipe.s2_group_fraction))


def unfreeze_extras(model, patterns) -> list[str]:
    """Make parameters whose names contain any pattern trainable (LongLoRA's `embed,norm`)."""
    names = []
    for name, param in model.named_parameters():
        if "lora_" not in name and any(p in name for p in patterns):
            param.requires_grad_(True)
            names.append(name)
    return names
