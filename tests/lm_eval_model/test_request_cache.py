"""`--use_cache` never hands a longmem run the scores another model, method or setting computed,
and an identical rerun still resumes from its own (lm-eval's real CachingLM, tiny models).

Each case scores one request through the cache, then overwrites the stored score with a sentinel:
a later run that reads the sentinel took the first run's score from the cache."""

import json
import shutil
from pathlib import Path

import pytest
from lm_eval.api.instance import Instance
from lm_eval.api.model import CachingLM, hash_args
from lm_eval.models.huggingface import HFLM

from lm_eval_longmem.lm_eval_model import request_cache
from lm_eval_longmem.lm_eval_model.longmem import LongMemLM
from lm_eval_longmem.lm_eval_model.request_cache import bound_cache_path
from tests.helpers.tiny_llama import build_tiny_model

REQUEST = Instance("loglikelihood", {}, ("the sea and the ship were old", " gold"), 0)
SENTINEL = (-12345.0, True)
STREAMING = {"method": "streamingllm", "max_context_length": 128, "chunk_size": 32}


@pytest.fixture(scope="module")
def other_model_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("other_llama"), seed=1)


@pytest.fixture(scope="module")
def recorded_checkpoint(tiny_model_dir, tmp_path_factory):
    """The tiny model as a checkpoint that records streamingllm (max_context_length=64, chunk_size=16)."""
    directory = tmp_path_factory.mktemp("recorded") / "export"
    shutil.copytree(tiny_model_dir, directory)
    config = json.loads((directory / "config.json").read_text())
    config.update(longmem_method="streamingllm", longmem_method_args={"max_context_length": 64, "chunk_size": 16})
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def load(model_dir, **model_args) -> LongMemLM:
    return LongMemLM(pretrained=str(model_dir), device="cpu", **model_args)


def cached(lm, cache_base: Path) -> CachingLM:
    """What `lm_eval --use_cache <cache_base>` wraps the model in (rank 0)."""
    return CachingLM(lm, f"{cache_base}_rank0.db")


def first_run(lm, cache_base: Path) -> str:
    """Score REQUEST through the cache, then poison the stored score; returns the database used."""
    cache = cached(lm, cache_base)
    (score,) = cache.loglikelihood([REQUEST])
    key = hash_args("loglikelihood", REQUEST.args)
    assert cache.dbdict[key] == score != SENTINEL
    cache.dbdict[key] = SENTINEL
    cache.dbdict.commit()
    return cache.cache_db


def second_run(lm, cache_base: Path):
    """(the score a later run gets for REQUEST, the database it used)."""
    cache = cached(lm, cache_base)
    (score,) = cache.loglikelihood([REQUEST])
    return score, cache.cache_db


@pytest.mark.parametrize(
    "first_args, second_args",
    [
        ({"method": "vanilla"}, STREAMING),  # the reported case: vanilla's scores shown as streamingllm's
        (STREAMING, {**STREAMING, "max_context_length": 96}),
        ({}, {"dtype": "bfloat16"}),
        ({}, {"max_length": 64}),
        ({}, {"rms_norm_eps": 1e-3}),  # a config attribute set through --model_args
    ],
    ids=["method", "method-argument", "dtype", "max_length", "config-override"],
)
def test_a_different_setting_does_not_reuse_the_scores(tiny_model_dir, tmp_path, first_args, second_args):
    first_db = first_run(load(tiny_model_dir, **first_args), tmp_path / "run")
    score, second_db = second_run(load(tiny_model_dir, **second_args), tmp_path / "run")
    assert score != SENTINEL and second_db != first_db


def test_another_model_does_not_reuse_the_scores(tiny_model_dir, other_model_dir, tmp_path):
    first_db = first_run(load(tiny_model_dir), tmp_path / "run")
    score, second_db = second_run(load(other_model_dir), tmp_path / "run")
    assert score != SENTINEL and second_db != first_db


def test_weights_rewritten_in_place_do_not_reuse_the_scores(tiny_model_dir, tmp_path):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    first_run(load(model_dir), tmp_path / "run")
    build_tiny_model(model_dir, seed=1)  # same path, new weights (a re-export, a later checkpoint)
    score, _ = second_run(load(model_dir), tmp_path / "run")
    assert score != SENTINEL


def test_an_argument_recorded_in_the_checkpoint_counts(recorded_checkpoint, tmp_path):
    first_run(load(recorded_checkpoint), tmp_path / "run")  # the method and arguments config.json records
    overridden, _ = second_run(load(recorded_checkpoint, max_context_length=80), tmp_path / "run")
    assert overridden != SENTINEL
    # The recorded arguments spelled out are the same computation: it resumes.
    spelled_out = {"method": "streamingllm", "max_context_length": 64, "chunk_size": 16}
    assert second_run(load(recorded_checkpoint, **spelled_out), tmp_path / "run")[0] == SENTINEL


def test_an_identical_rerun_resumes_and_batch_size_does_not_split(tiny_model_dir, tmp_path):
    first_db = first_run(load(tiny_model_dir, **STREAMING), tmp_path / "run")
    score, second_db = second_run(load(tiny_model_dir, **STREAMING, batch_size=4), tmp_path / "run")
    assert score == SENTINEL and second_db == first_db


def test_each_method_keeps_its_own_database_beside_the_path_given(tiny_model_dir, tmp_path):
    vanilla_db = first_run(load(tiny_model_dir, method="vanilla"), tmp_path / "run")
    streaming_db = first_run(load(tiny_model_dir, **STREAMING), tmp_path / "run")
    assert Path(vanilla_db).name.startswith(f"run_longmem__{Path(tiny_model_dir).name}__vanilla__")
    assert Path(streaming_db).name.startswith(f"run_longmem__{Path(tiny_model_dir).name}__streamingllm__")
    assert vanilla_db.endswith("_rank0.db") and streaming_db.endswith("_rank0.db")
    # Each database has its fingerprint beside it, to read.
    described = json.loads(Path(streaming_db.removesuffix("_rank0.db") + ".json").read_text())
    assert described["method"] == "streamingllm" and described["method_args"]["max_context_length"] == 128
    assert described["model"]["path"] == str(Path(tiny_model_dir).resolve())
    # And both resume from their own scores.
    assert second_run(load(tiny_model_dir, method="vanilla"), tmp_path / "run")[0] == SENTINEL
    assert second_run(load(tiny_model_dir, **STREAMING), tmp_path / "run")[0] == SENTINEL


def test_model_hf_keeps_lm_eval_path_and_behaviour(tiny_model_dir, tmp_path):
    request_cache.install()  # as in any process that built a longmem model
    hf = HFLM(pretrained=str(tiny_model_dir), device="cpu")
    path = first_run(hf, tmp_path / "run")
    assert path == f"{tmp_path / 'run'}_rank0.db"
    assert second_run(hf, tmp_path / "run") == (SENTINEL, path)  # lm-eval's own keying, untouched


@pytest.mark.parametrize(
    "given, database, described",
    [
        ("c/run_rank3.db", "c/run_longmem__m__x__d_rank3.db", "c/run_longmem__m__x__d.json"),
        ("c/run.db", "c/run_longmem__m__x__d.db", "c/run_longmem__m__x__d.json"),
        ("c/run", "c/run_longmem__m__x__d.db", "c/run_longmem__m__x__d.json"),
    ],
)
def test_bound_path_keeps_lm_eval_rank_ending(given, database, described):
    assert bound_cache_path(given, "m__x", "d") == (database, described)
