"""CLEX's lengths as the start-up check, the tasks and the results read them: the training length
is C, inputs stop at C x max_factor (the context length and the hard limit alike), read from the
checkpoint's own settings before any model loads; an export records C where readers look."""

from __future__ import annotations

import json

import pytest
from transformers import LlamaConfig

from lm_eval_longmem.models.checkpoint.context_length import hard_input_limit, training_length, usable_context_length
from lm_eval_longmem.models.clex.checkpoint import write_clex_config
from lm_eval_longmem.models.clex.config_format import clex_rope_scaling
from lm_eval_longmem.models.method_registry import build_method


def _config(max_position_embeddings, **extra):
    return LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        num_attention_heads=4,
        num_hidden_layers=1,
        max_position_embeddings=max_position_embeddings,
        **extra,
    )


def test_a_base_read_at_a_shorter_c_is_limited_to_c_times_max_factor():
    """The tiny-clex recipe's case: a base model of 8192 positions read as C = 128, max factor 4."""
    config = _config(8192)
    method = build_method("clex", {"original_length": 128, "max_factor": 4})
    assert training_length(config, None, method) == 128
    assert usable_context_length(config, method) == 512
    assert hard_input_limit(config, method) == 512
    assert hard_input_limit(config, build_method("clex", {"original_length": 128, "max_factor": 4}), 4096) == 512


def test_the_checkpoint_s_max_factor_counts_before_the_model_loads():
    config = _config(128, rope_scaling=clex_rope_scaling(4, 1, "silu", 0.1))
    method = build_method("clex", {})
    assert usable_context_length(config, method) == 512  # not the paper's default factor 16
    assert hard_input_limit(config, build_method("clex", {})) == 512


def test_methods_without_a_limit_of_their_own_are_unchanged():
    assert hard_input_limit(_config(8192), build_method("vanilla", {})) is None
    assert training_length(_config(8192), None, build_method("yarn", {"factor": 4})) == 8192


def test_the_export_config_names_c_as_max_position_embeddings(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 8192, "rope_theta": 10000.0}))
    settings = {"max_factor": 4, "param_factor": 1, "act": "silu", "time_dt": 0.1, "log_scale": False}
    write_clex_config(tmp_path, settings, 10000.0, 128)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["max_position_embeddings"] == 128 and config["rope_scaling"]["max_factor"] == 4


def test_a_max_length_past_c_times_max_factor_is_refused():
    from lm_eval_longmem.models.checkpoint.context_length import BeyondMethodLimitError

    config = _config(128, rope_scaling=clex_rope_scaling(4, 1, "silu", 0.1))
    assert usable_context_length(config, build_method("clex", {}), 300) == 300
    with pytest.raises(BeyondMethodLimitError, match="max_length=4096 is more than method=clex can run: at most 512"):
        usable_context_length(config, build_method("clex", {}), 4096)
