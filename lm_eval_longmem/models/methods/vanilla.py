"""`vanilla`: the model exactly as it was trained — the baseline every method is compared to."""

from lm_eval_longmem.models.method_framework.base import LongMemMethod


class Vanilla(LongMemMethod):
    name = "vanilla"
    summary = "the model unchanged (baseline)"
    leaves_model_as_trained = True
