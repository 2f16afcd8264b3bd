"""A checkpoint in the Landmark study's own format (config `model_type: llama_with_landmark`, as the
official `LlamaLandmarkConfig` saves it) loads unchanged, selects method=landmark by itself and
scores exactly as the same weights saved as a plain Llama."""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

from lm_eval_longmem.lm_eval_model.longmem import LongMemLM
from lm_eval_longmem.models.landmark.checkpoint import STUDY_MODEL_TYPE, NoLandmarkTokenError
from lm_eval_longmem.models.method_registry.resolution import resolve_method
from lm_eval_longmem.models.runtime.attention_layout import attention_layout
from lm_eval_longmem.models.runtime.requests import TokenText
from tests.helpers.landmark_checkpoint import study_copy


@pytest.fixture(scope="module")
def study_dir(tiny_landmark_dir, tmp_path_factory):
    return study_copy(tiny_landmark_dir, tmp_path_factory.mktemp("study") / "model")


def test_the_model_type_selects_landmark_with_the_checkpoints_layout(study_dir):
    resolved = resolve_method({"pretrained": str(study_dir)})
    assert resolved.name == "landmark" and resolved.from_checkpoint
    assert resolve_method({"pretrained": str(study_dir), "method": "vanilla"}).name == "vanilla"  # method= wins


def test_it_loads_unchanged_and_scores_as_the_same_weights_saved_as_llama(study_dir, tiny_landmark_dir):
    study = LongMemLM(pretrained=str(study_dir), device="cpu", top_k=2)
    plain = LongMemLM(pretrained=str(tiny_landmark_dir), method="landmark", device="cpu", top_k=2)
    assert study.model.config.model_type == STUDY_MODEL_TYPE
    assert attention_layout(study.model.config).family == "llama"
    info = study.get_model_info()
    assert info["longmem_method"] == "landmark" and info["longmem_scoring"] == "landmark_windows"
    assert info["longmem_method_args"]["block_size"] == 4 and info["longmem_method_args"]["train_context_length"] == 32
    # 60 tokens: windows of 20 (blocks of 4, top_k 2, trained length 32), so retrieval runs
    context, continuation = list(range(5, 65)), [70, 71, 72]
    request = Instance("loglikelihood", {}, (TokenText("c", context), TokenText("x", continuation)), 0)
    assert study.loglikelihood([request]) == plain.loglikelihood([request])


def test_a_study_config_without_the_landmark_token_is_refused_in_one_line(tiny_landmark_dir, tmp_path):
    directory = study_copy(tiny_landmark_dir, tmp_path / "model", drop=("mem_id",))
    with pytest.raises(NoLandmarkTokenError, match="no <landmark> token"):
        LongMemLM(pretrained=str(directory), device="cpu")
