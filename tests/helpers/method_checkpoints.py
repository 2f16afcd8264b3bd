"""The tiny checkpoints the method matrix runs each method on, as fixtures available to every test
module through `pytest_plugins` in tests/conftest.py: the session's tiny Llama (`tiny_model_dir`),
a tiny FoX for a method that needs a FoX checkpoint, or the one `OWN_CHECKPOINT` names."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers.fox_fixtures import build_tiny_fox

# A method that needs a checkpoint of its own besides FoX: the fixture that builds it.
OWN_CHECKPOINT = {"longrope": "tiny_longrope_dir", "landmark": "tiny_landmark_dir"}


@pytest.fixture(scope="session")
def tiny_fox_dir(tmp_path_factory):
    return build_tiny_fox(tmp_path_factory.mktemp("matrix_fox"))


@pytest.fixture(scope="session")
def tiny_longrope_dir(tiny_model_dir, tmp_path_factory):
    """The tiny Llama with LongRoPE factors in its config, as a Phi-3 checkpoint ships them:
    trained to 32 tokens, extended to its 128 (factor 4); short factors 1, long ones rising."""
    directory = tmp_path_factory.mktemp("matrix_longrope") / "model"
    shutil.copytree(tiny_model_dir, directory)
    config = json.loads((directory / "config.json").read_text())
    head_half = config["hidden_size"] // config["num_attention_heads"] // 2
    config["rope_parameters"] = {
        "rope_type": "longrope",
        "rope_theta": config["rope_parameters"]["rope_theta"],
        "factor": 4.0,
        "original_max_position_embeddings": 32,
        "short_factor": [1.0] * head_half,
        "long_factor": [1.0 + i for i in range(head_half)],
    }
    (directory / "config.json").write_text(json.dumps(config))
    return directory


@pytest.fixture(scope="session")
def tiny_landmark_dir(tiny_model_dir, tmp_path_factory):
    """The tiny Llama with a `<landmark>` token: blocks of 4, trained length 32 (untrained weights)."""
    from tests.helpers.landmark_checkpoint import build_tiny_landmark

    return build_tiny_landmark(tmp_path_factory.mktemp("matrix_landmark") / "model", tiny_model_dir)


def checkpoint_of(name: str, request):
    """The tiny checkpoint method `name` runs on."""
    from lm_eval_longmem.models.method_registry import available_methods

    if available_methods()[name].needs_fox_checkpoint:
        return request.getfixturevalue("tiny_fox_dir")
    return request.getfixturevalue(OWN_CHECKPOINT.get(name, "tiny_model_dir"))
