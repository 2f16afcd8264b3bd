"""The Landmark study's checkpoint type, `llama_with_landmark`, loaded as the Llama it is.

The official code saves its fine-tunes with `LlamaLandmarkConfig`: a LlamaConfig subclass of
model type `llama_with_landmark` that adds the four landmark keys (checkpoint.py). The weights are
Llama's. transformers knows no such model type and refuses the checkpoint with a "does not
recognize this architecture" traceback, so users had to edit config.json by hand. Registering the
type with the Auto classes lets it load unchanged. The model type then selects `method=landmark`
(recorded.py) and reads as the `llama` family (attention_layout.py).

The official class also has defaults (mem_id 32001, mem_freq 50, train_context_length 512). They
are not assumed here: a checkpoint saved by that class writes all four keys, and a config without
`mem_id` is refused in one line.

Importing this module registers the type (idempotent).
"""

from __future__ import annotations

from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

from lm_eval_longmem.models.landmark.checkpoint import STUDY_MODEL_TYPE


class StudyLandmarkConfig(LlamaConfig):
    """LlamaConfig under the study's model type; the landmark keys ride along as extra attributes."""

    model_type = STUDY_MODEL_TYPE


class StudyLandmarkForCausalLM(LlamaForCausalLM):
    """LlamaForCausalLM for that config: the same modules and weight names."""

    config_class = StudyLandmarkConfig


def register_study_format() -> None:
    AutoConfig.register(STUDY_MODEL_TYPE, StudyLandmarkConfig, exist_ok=True)
    AutoModelForCausalLM.register(StudyLandmarkConfig, StudyLandmarkForCausalLM, exist_ok=True)


register_study_format()
