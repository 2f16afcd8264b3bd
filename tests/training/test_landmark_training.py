"""approach=landmark: the tiny recipe trains through the landmark loop, resumes bit for bit, and its
export runs under method=landmark with nothing else given; what it cannot train is refused."""

import json
from pathlib import Path

import pytest
import torch

from lm_eval_longmem_training.errors import TrainingError
from lm_eval_longmem_training.loop.progress import read_metrics
from tests.helpers.training_helpers import run_recipe

BLOCKS_OF_4 = {"method_args.block_size": 4, "method_args.top_k": 2}  # seq_len 32: windows of 20


def test_trains_resumes_and_the_export_runs_as_landmark(tiny_model_dir, corpus_file, tmp_path):
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    run_recipe("tiny-landmark", tiny_model_dir, corpus_file, whole, max_steps=3, save_every=1, **BLOCKS_OF_4)
    run_recipe(
        "tiny-landmark",
        tiny_model_dir,
        corpus_file,
        parts,
        max_steps=3,
        stop_after_steps=2,
        save_every=1,
        **BLOCKS_OF_4,
    )
    resumed = run_recipe("tiny-landmark", tiny_model_dir, corpus_file, parts, max_steps=3, save_every=1, **BLOCKS_OF_4)
    assert [m["loss"] for m in read_metrics(parts)] == [m["loss"] for m in read_metrics(whole)]
    export = Path(resumed["export"])
    config = json.loads((export / "config.json").read_text())
    assert config["longmem_method"] == "landmark" and config["mem_freq"] == 3 and config["train_context_length"] == 32
    assert config["include_landmark_in_loss"] is True and config["vocab_size"] == config["mem_id"] + 1

    from lm_eval.api.instance import Instance

    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    lm = LongMemLM.create_from_arg_string(f"pretrained={export}", {"device": "cpu", "batch_size": 1})
    assert lm.longmem_method.name == "landmark" and lm.longmem_method.block_size == 4
    assert lm.longmem_method.window == 20
    request = Instance("loglikelihood", {}, ("the old king said to the young man " * 6, " and the sea"), 0)
    ((loglikelihood, _),) = lm.loglikelihood([request], disable_tqdm=True)
    assert -100 < loglikelihood < 0


def test_landmark_embedding_rows_start_at_the_mean(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from lm_eval_longmem.models.landmark.tokens import add_landmark_token

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    old = model.get_input_embeddings().weight[:].detach().clone()
    landmark = add_landmark_token(model, tokenizer)
    assert landmark == old.shape[0] and tokenizer.convert_ids_to_tokens(landmark) == "<landmark>"
    assert torch.allclose(model.get_input_embeddings().weight[landmark], old.mean(0))
    assert torch.allclose(
        model.get_output_embeddings().weight[landmark], model.get_output_embeddings().weight[:-1].mean(0)
    )


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"method": "infini"}, "needs method=landmark"),
        ({"method_args.train_context_length": 64}, "must equal seq_len"),
        ({"gradient_checkpointing": True}, "gradient_checkpointing=false"),
    ],
)
def test_refusals(tiny_model_dir, corpus_file, tmp_path, overrides, message):
    with pytest.raises(TrainingError, match=message):
        run_recipe("tiny-landmark", tiny_model_dir, corpus_file, tmp_path, **{**BLOCKS_OF_4, **overrides})


@pytest.mark.parametrize("landmark_in_loss", [True, False])
def test_masked_labels_leave_only_their_targets_in_the_loss(tiny_model_dir, landmark_in_loss):
    """labels = -100 drops a target as in transformers, and landmarks stay targets when they are in
    the loss: the mean over {early targets} and over {late targets} add up to the mean over all."""
    from transformers import AutoModelForCausalLM

    from lm_eval_longmem_training.modeling.landmark_causal_lm import LandmarkCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    wrapped = LandmarkCausalLM(model, model.config.vocab_size - 1, 4, landmark_in_loss)
    row = torch.randint(4, 60, (1, 10), generator=torch.Generator().manual_seed(0))

    def loss(masked: slice | None) -> float:
        labels = row.clone()
        if masked is not None:
            labels[0, masked] = -100
        with torch.no_grad():
            return wrapped(input_ids=row, labels=labels).loss.double().item()

    landmarks = 3 if landmark_in_loss else 0  # 10 tokens in blocks of 3 + a landmark: 3 landmark targets
    early, late = loss(slice(5, None)), loss(slice(None, 5))  # visible targets 1-4, then 5-9
    total = (early * (4 + landmarks) + late * (5 + landmarks)) - (loss(slice(None)) * landmarks if landmarks else 0)
    assert total == pytest.approx(loss(None) * (9 + landmarks), rel=1e-6)
    assert early != pytest.approx(late, rel=1e-3)


def test_training_continues_from_the_studys_format(tiny_landmark_dir, corpus_file, tmp_path, monkeypatch):
    """A base model of model type `llama_with_landmark` (the official code's) trains on, its own
    landmark token kept, although nothing in this process registered the type beforehand."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from lm_eval_longmem.models.landmark.checkpoint import STUDY_MODEL_TYPE
    from tests.helpers.landmark_checkpoint import study_copy

    monkeypatch.delitem(CONFIG_MAPPING._extra_content, STUDY_MODEL_TYPE, raising=False)  # as in a fresh process
    study = study_copy(tiny_landmark_dir, tmp_path / "study")
    landmark_id = json.loads((study / "config.json").read_text())["mem_id"]
    summary = run_recipe("tiny-landmark", study, corpus_file, tmp_path / "run", max_steps=1, **BLOCKS_OF_4)
    config = json.loads((Path(summary["export"]) / "config.json").read_text())
    assert config["model_type"] == STUDY_MODEL_TYPE and config["longmem_method"] == "landmark"
    assert config["mem_id"] == landmark_id and config["vocab_size"] == landmark_id + 1  # no second token added
