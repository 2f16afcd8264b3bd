"""A tiny landmark checkpoint: the tiny Llama given a `<landmark>` token (mean embedding rows) and
the study's layout keys in its config, untrained beyond that (tests of mechanics, not quality)."""

from __future__ import annotations


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
