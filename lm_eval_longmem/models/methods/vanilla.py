"""`vanilla`: the model exactly as it was trained — the baseline every method is compared to."""

from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings


class Vanilla(LongMemMethod):
    name = "vanilla"
    summary = "the model unchanged (baseline)"
    tiny_settings = TinySettings(acting={}, neutral={})
    leaves_model_as_trained = True
