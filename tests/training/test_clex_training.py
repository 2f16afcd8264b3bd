"""CLEX training: the authors' position sampler, a run that resumes bit for bit, and an export in
the authors' format that `lm_eval --model longmem --model_args pretrained=<export>` runs as clex."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from lm_eval_longmem.models.clex.position_sampler import sample_positions
from lm_eval_longmem_training.loop.progress import read_metrics
from tests.helpers.training_helpers import run_recipe
from tests.training.test_exports import lm_eval

CLEX_KEYS = (
    "model.clex_layer.inv_freq",
    "model.clex_layer.proj_func.ode_up_proj",
    "model.clex_layer.proj_func.ode_down_proj",
)


@pytest.mark.parametrize(("length", "factor", "original"), [(32, 1, 128), (32, 4, 128), (64, 3, 16), (10, 2, 4)])
def test_sampled_positions_hold_the_authors_invariants(length, factor, original):
    stride = max(1, length // original)
    positions = sample_positions(length, factor, original, generator=torch.Generator().manual_seed(0))
    assert positions.shape == (length,) and positions.dtype == torch.float32
    assert positions[0] == 0 and positions[-1] == length * factor // stride - 1
    assert bool((positions[1:-1] > positions[:-2]).all())  # sorted, no repeats (up to the pinned last one)
    inner = positions[1:-1] * stride
    assert torch.equal(inner, inner.round()) and inner.min() >= 1  # steps of 1/s, after p_0
    assert inner.max() <= length * factor - 2  # drawn from 1 .. L t' - 2, before dividing by s
    if stride == 1:  # the last pinned position is then the largest: L t' - 1
        assert positions[-2] < positions[-1]


def test_with_a_stride_an_inner_position_can_pass_the_pinned_last_one():
    """The authors' sampler as written: with s = 4, u + 1 can reach L t' - 2 = 190, i.e. 47.5, past
    p_{L-1} = floor(192 / 4) - 1 = 47. Kept (a position half a step past the end is harmless)."""
    found = max(sample_positions(64, 3, 16, generator=torch.Generator().manual_seed(s))[-2].item() for s in range(40))
    assert found > 47.0


def test_one_factor_within_c_samples_the_ordinary_positions():
    assert torch.equal(sample_positions(32, 1, 128), torch.arange(32, dtype=torch.float32))


@pytest.fixture(scope="module")
def whole_run(tiny_model_dir, corpus_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("clex") / "whole"
    return out, run_recipe("tiny-clex", tiny_model_dir, corpus_file, out, max_steps=4, save_every=2)


def test_a_stopped_and_resumed_clex_run_equals_the_uninterrupted_one(whole_run, tiny_model_dir, corpus_file, tmp_path):
    whole, _ = whole_run
    parts = tmp_path / "parts"
    stopped = run_recipe("tiny-clex", tiny_model_dir, corpus_file, parts, max_steps=4, save_every=2, stop_after_steps=2)
    assert stopped["steps"] == 2
    run_recipe("tiny-clex", tiny_model_dir, corpus_file, parts, max_steps=4, save_every=2)
    assert [m["loss"] for m in read_metrics(parts)] == [m["loss"] for m in read_metrics(whole)]
    a, b = (load_file(str(d / "export" / "model.safetensors")) for d in (whole, parts))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_the_export_is_in_the_authors_format_and_runs_through_lm_eval(whole_run, corpus_file, tmp_path):
    _, summary = whole_run
    export = Path(summary["export"])
    config = json.loads((export / "config.json").read_text())
    assert config["rope_scaling"] == {
        "type": "clex",
        "max_factor": 4,
        "param_factor": 1,
        "act": "silu",
        "time_dt": 0.1,
        "factor": 1,
    }
    assert config["rope_theta"] == 10000.0 and config["log_scale"] is False
    assert config["max_position_embeddings"] == 128  # C, as the authors' checkpoints keep it
    weights = load_file(str(export / "model.safetensors"))
    assert all(key in weights for key in CLEX_KEYS)
    assert weights["model.clex_layer.proj_func.ode_down_proj"].abs().sum() > 0  # the ODE trained (some t' > 1)
    results = lm_eval(f"pretrained={export}", corpus_file, tmp_path / "eval")  # method=clex picked by itself
    assert results["config"]["longmem_method"] == "clex"
    assert results["config"]["longmem_method_args"]["original_length"] == 128
    assert results["config"]["longmem_context_length"] == 512  # C x max_factor
    assert results["config"]["longmem_method_run"]["factors_used"] == [1]  # inputs of 40 tokens: t = 1
