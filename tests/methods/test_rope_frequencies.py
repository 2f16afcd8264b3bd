"""RoPE frequency methods against the controlled study's formulas (eqs. 8-10, appendix 7.8),
on the tiny Llama (head_dim 8, base 10000, C = 128): theta_j = 10000^(-2j/8) = 1, 0.1, 0.01, 0.001."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import AutoConfig

from lm_eval_longmem.models.method_framework.rope_extension_family import RopeExtensionMethod
from lm_eval_longmem.models.method_registry import available_methods, build_method
from lm_eval_longmem.models.rope.frequencies import dynamic_ntk_factor
from lm_eval_longmem.models.rope.parameters import NotARopeModelError
from tests.helpers.rope_helpers import load_with_method, token_ids

THETA = torch.tensor([1.0, 0.1, 0.01, 0.001])
# Read from the methods, so that a new one is checked without editing this file: the methods that
# rewrite RoPE, and among them the family that extends it to a target length.
ROPE_METHODS = [name for name, cls in available_methods().items() if cls.rewrites_rope]
EXTENSION_METHODS = [name for name, cls in available_methods().items() if issubclass(cls, RopeExtensionMethod)]


def inv_freq(model) -> torch.Tensor:
    return model.model.rotary_emb.inv_freq.double()


def test_pi_divides_every_frequency_by_t(tiny_model_dir):
    model = load_with_method(tiny_model_dir, "pi", factor=2.0)
    assert torch.allclose(inv_freq(model), THETA.double() / 2, rtol=1e-6)
    assert model.config.rope_parameters["rope_type"] == "linear"


def test_ntk_scales_base_by_kappa(tiny_model_dir):
    # t = 4, d = 8: kappa = 4^(8/6); alpha_j = kappa^(-2j/8) = 4^(-j/3)
    model = load_with_method(tiny_model_dir, "ntk", factor=4.0)
    expected = torch.tensor([1.0, 0.1 / 4 ** (1 / 3), 0.01 / 4 ** (2 / 3), 0.001 / 4], dtype=torch.float64)
    assert torch.allclose(inv_freq(model), expected, rtol=1e-5)
    # the lowest frequency matches PI's, the highest is RoPE's
    assert inv_freq(model)[-1].item() == pytest.approx(0.001 / 4, rel=1e-5)


def test_target_length_is_factor_over_original_length(tiny_model_dir):
    model = load_with_method(tiny_model_dir, "pi", target_length=384)
    assert torch.allclose(inv_freq(model), THETA.double() / 3, rtol=1e-6)


@pytest.mark.parametrize(
    "s, original, training, length, expected",
    [
        # Table 14, LLaMA-3 (C = 8k) NTK-Frozen, s = 2: 4k 1, 8k 1, 16k 3, 32k 7, 64k 15
        (2, 8192, 8192, 4096, 1),
        (2, 8192, 8192, 8192, 1),
        (2, 8192, 8192, 16384, 3),
        (2, 8192, 8192, 32768, 7),
        (2, 8192, 8192, 65536, 15),
        # Table 14, LLaMA-2 (C = 4k) NTK-32K, s = 4, C' = 32k: 29 up to 32k, 61 at 64k
        (4, 4096, 32768, 4096, 29),
        (4, 4096, 32768, 32768, 29),
        (4, 4096, 32768, 65536, 61),
    ],
)
def test_dynamic_ntk_factor_reproduces_table_14(s, original, training, length, expected):
    assert dynamic_ntk_factor(s, length, training, original) == expected


def test_dynamic_ntk_base_follows_each_sequence(tiny_model_dir):
    model = load_with_method(tiny_model_dir, "dynamic_ntk", s=2.0, factor=4.0)
    with torch.no_grad():
        model(token_ids(1, 100))  # within C: t = 1, plain RoPE
        assert torch.allclose(inv_freq(model), THETA.double(), rtol=1e-6)
        model(token_ids(1, 256))  # C_test = 256: t = 2*256/128 - 1 = 3, kappa = 3^(4/3)
        expected = torch.tensor([1.0, 0.1 / 3 ** (1 / 3), 0.01 / 3 ** (2 / 3), 0.001 / 3], dtype=torch.float64)
        assert torch.allclose(inv_freq(model), expected, rtol=1e-5)
        model(token_ids(1, 60))  # a later, shorter sequence is not affected by the longer one
        assert torch.allclose(inv_freq(model), THETA.double(), rtol=1e-6)


def test_dynamic_ntk_frozen_below_training_length(tiny_model_dir):
    # fine-tuned to C' = 256 with s = 2: t = 2*256/128 - 1 = 3 for every length up to 256
    model = load_with_method(tiny_model_dir, "dynamic_ntk", s=2.0, training_length=256)
    with torch.no_grad():
        model(token_ids(1, 50))
    assert inv_freq(model)[-1].item() == pytest.approx(0.001 / 3, rel=1e-5)


def test_yarn_ramp_and_temperature(tiny_model_dir):
    # C = 128: dimension j turns r_j = C*theta_j/(2 pi) = 20.4, 2.04, 0.204, 0.0204 times.
    # beta_fast 16, beta_slow 1: j=0 (r > 16) keeps theta (gamma 1), j=2,3 (r < 1) get theta/t
    # (gamma 0); j=1 lies on the ramp, which YaRN's reference (and transformers) makes linear in
    # the dimension index between the correction dimensions floor(0.105)=0 and ceil(1.31)=2: gamma 1/2.
    t = 4.0
    model = load_with_method(tiny_model_dir, "yarn", factor=t, beta_fast=16, beta_slow=1)
    gamma = torch.tensor([1.0, 0.5, 0.0, 0.0], dtype=torch.float64)
    alpha = (1 - gamma) / t + gamma  # eq. 10 without the temperature
    assert torch.allclose(inv_freq(model), THETA.double() * alpha, rtol=1e-5)
    assert model.model.rotary_emb.attention_scaling == pytest.approx(0.1 * math.log(t) + 1)


@pytest.mark.parametrize("method", EXTENSION_METHODS)
def test_methods_keep_rope_theta(tiny_model_dir, method):
    """A method never loses the checkpoint's base (a reset to transformers' default 10,000 would run,
    meaninglessly); only a method whose formula is to raise the base (adjusted base frequency) moves it, up."""
    config = AutoConfig.from_pretrained(tiny_model_dir)
    config.rope_parameters["rope_theta"] = 500000.0
    build_method(method, {}).prepare_config(config)
    theta = config.rope_parameters["rope_theta"]
    assert theta >= 500000.0


@pytest.mark.parametrize("method", ROPE_METHODS)
def test_rope_methods_refuse_models_without_rope(method):
    from transformers import GPT2Config

    with pytest.raises(NotARopeModelError, match="RoPE|LongRoPE"):
        build_method(method, {}).prepare_config(GPT2Config(n_layer=1, n_embd=16, n_head=2))


def test_longrope_needs_the_checkpoints_factors(tiny_model_dir):
    with pytest.raises(NotARopeModelError, match="long_factor"):
        build_method("longrope", {}).prepare_config(AutoConfig.from_pretrained(tiny_model_dir))


def test_factor_and_target_length_are_exclusive():
    from lm_eval_longmem.models.method_registry import MethodArgumentError

    with pytest.raises(MethodArgumentError, match="not both"):
        build_method("yarn", {"factor": "2", "target_length": "512"})
