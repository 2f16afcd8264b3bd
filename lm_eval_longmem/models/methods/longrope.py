"""`longrope`: a checkpoint's own LongRoPE scaling (Phi-3 style), passed through.

LongRoPE's per-dimension long/short factors are searched for one model and shipped in its
config, so there is nothing to choose here: the method checks the checkpoint has them and
lets transformers' native `longrope` rope type apply them; the context length is the
checkpoint's max_position_embeddings."""

from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.method_framework.tiny_settings import TinySettings
from lm_eval_longmem.models.rope.parameters import NotARopeModelError, rope_parameters


class LongRoPE(LongMemMethod):
    name = "longrope"
    summary = "the checkpoint's own LongRoPE factors (transformers rope_type longrope), checked and kept"
    paper = "LongRoPE (not in the study)"
    docs_page = "methods/rope.md"
    # run on a checkpoint with LongRoPE factors (tests/helpers/method_checkpoints.py), long past its original 32 tokens
    tiny_settings = TinySettings(
        acting={},
        neutral={},
        scores_as_vanilla_because="keeps the checkpoint's own LongRoPE factors, which vanilla applies too",
    )
    rewrites_rope = True

    def prepare_config(self, config) -> None:
        params = rope_parameters(config, self.name, per_layer_type=False)
        if params.get("rope_type") != "longrope" or not params.get("long_factor"):
            raise NotARopeModelError(
                f"method=longrope keeps a checkpoint's own LongRoPE factors, but this config has "
                f"rope_type={params.get('rope_type')!r} without long_factor/short_factor. LongRoPE factors are "
                "searched per model; for a model without them use method=yarn, ntk or pi."
            )
