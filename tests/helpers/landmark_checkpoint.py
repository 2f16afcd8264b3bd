"""A tiny landmark checkpoint: the tiny Llama given a `<landmark>` token (mean embedding rows) and
the study's layout keys in its config, untrained beyond that (tests of mechanics, not quality)."""

from __future__ import annotations

import json
import shutil


def build_tiny_landmark(directory, source, block_size: int = 4, train_context_length: int = 32):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from lm_eval_longmem.models.landmark.checkpoint import record_layout
    from lm_eval_longmem.models.landmark.tokens import add_landmark_token

    model = AutoModelForCausalLM.from_pretrained(source)
    tokenizer = AutoTokenizer.from_pretrained(source)
    landmark_id = add_landmark_token(model, tokenizer)
    record_layout(model.config, landmark_id, block_size, train_context_length, True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def study_copy(source, directory, drop=()):
    """A copy of the landmark checkpoint `source` with its config as the study's official
    `LlamaLandmarkConfig` writes it (`model_type: llama_with_landmark`), less the keys in `drop`."""
    from lm_eval_longmem.models.landmark.checkpoint import STUDY_MODEL_TYPE

    shutil.copytree(source, directory)
    path = directory / "config.json"
    config = json.loads(path.read_text())
    config["model_type"] = STUDY_MODEL_TYPE
    for key in drop:
        config.pop(key)
    path.write_text(json.dumps(config))
    return directory
