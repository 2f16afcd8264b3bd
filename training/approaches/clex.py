"""`clex`: CLEX fine-tuning (Chen et al., ICLR 2024): the whole model plus the ODE's weights.

The model runs through method=clex's own attention (keys rotated with theta_t), each forward at a
random factor t' with the authors' sampled positions (`clex_sampled_factor.py`). All weights train
at the recipe's lr (the study: 2e-5, no weight decay), the ODE's U and D included. The export is
an ordinary checkpoint in the authors' format (`rope_scaling` of type clex, `model.clex_layer.*`
weights), which `pretrained=<dir>` loads with method=clex and the authors' code loads as theirs."""

from __future__ import annotations

from ..errors import TrainingError
from .base import TRAINING_RECORD_KEY, Approach, build_method, load_pretrained, save_recorded_checkpoint


class ClexApproach(Approach):
    name = "clex"
    summary = "CLEX fine-tuning: full model + the frequency ODE, a random factor t' per forward (method=clex)"
    # t' = 1 leaves the ODE's weights out of that forward's graph (DDP: find_unused_parameters).
    has_unused_parameters = True

    def check(self, recipe):
        if recipe.method != "clex":
            raise TrainingError("approach=clex needs method=clex (its arguments in method_args).")
        build_method(recipe)

    def build(self, recipe):
        from ..modeling.clex_sampled_factor import ClexSampledFactorLM

        trainable = load_pretrained(
            recipe
        )  # prepare_model attaches the CLEX layer (trained weights from a CLEX export)
        causal_lm = trainable.model
        plan = next(m.longmem_clex for m in causal_lm.modules() if hasattr(m, "longmem_clex"))
        trainable.extras = {"causal_lm": causal_lm}
        trainable.model = ClexSampledFactorLM(causal_lm, plan)
        return trainable

    def export(self, trainable, model, directory, run_record, state_dict=None) -> None:
        from lm_eval_longmem.models.clex.checkpoint import write_clex_config

        causal_lm = model.model
        if state_dict is not None:  # gathered from the wrapper: the causal LM's own keys
            state_dict = {k.removeprefix("model."): v for k, v in state_dict.items()}
        save_recorded_checkpoint(causal_lm, trainable.tokenizer, directory, trainable.method, run_record, state_dict)
        method = trainable.method
        settings = {
            name: method.setting(name) for name in ("max_factor", "param_factor", "act", "time_dt", "log_scale")
        }
        rope_theta = float(method.rope_theta)
        write_clex_config(directory, settings, rope_theta, method.base_length)
        setattr(causal_lm.config, TRAINING_RECORD_KEY, run_record)
