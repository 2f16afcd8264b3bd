"""accelerate's "Removed shared tensor" notice at checkpoint saves: dropped for the model's
declared ties, kept for anything else (training/checkpoints/tied_weights_notice.py)."""

from __future__ import annotations

import logging

from accelerate import PartialState
from accelerate.utils.other import clean_state_dict_for_safetensors
from transformers import LlamaConfig

from lm_eval_longmem_training.checkpoints.tied_weights_notice import (
    ACCELERATE_LOGGER,
    declared_ties,
    quiet_declared_ties,
)
from tests.helpers.tiny_models import tiny_of


def _tiny_llama(tied: bool):
    return tiny_of(LlamaConfig, tie_word_embeddings=tied)


def test_the_notice_is_dropped_for_declared_ties_only(caplog):
    PartialState()  # accelerate's logger needs its state, as in a training run
    model = _tiny_llama(tied=True)
    assert declared_ties(model) == {"lm_head.weight"}
    state = dict(model.state_dict())
    with caplog.at_level(logging.WARNING, logger=ACCELERATE_LOGGER), quiet_declared_ties(model):
        clean_state_dict_for_safetensors(dict(state))  # accelerate's own save path: removes lm_head.weight
    assert "Removed shared tensor" not in caplog.text
    # a tensor the model does not declare tied still warns
    state["model.norm.weight"] = state["model.embed_tokens.weight"]
    with caplog.at_level(logging.WARNING, logger=ACCELERATE_LOGGER), quiet_declared_ties(model):
        clean_state_dict_for_safetensors(dict(state))
    assert "Removed shared tensor" in caplog.text


def test_an_untied_config_declares_no_ties():
    assert declared_ties(_tiny_llama(tied=False)) == set()


def test_ties_inside_a_training_wrapper_are_named_as_it_saves_them(caplog):
    """CLEX's and Landmark's trainings save a wrapper around the causal LM: its state dict says
    "model.lm_head.weight", and the notice for it is dropped as well."""
    import torch

    class Wrapper(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

    PartialState()
    wrapper = Wrapper(_tiny_llama(tied=True))
    assert declared_ties(wrapper) == {"model.lm_head.weight"}
    with caplog.at_level(logging.WARNING, logger=ACCELERATE_LOGGER), quiet_declared_ties(wrapper):
        clean_state_dict_for_safetensors(dict(wrapper.state_dict()))
    assert "Removed shared tensor" not in caplog.text
