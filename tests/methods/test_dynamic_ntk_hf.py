"""`dynamic_ntk,variant=hf` is transformers' own `dynamic` rope type, beside the study's frozen one.

Tiny Llama: head_dim 8 (d/(d-2) = 4/3), base 10000, C = max_position_embeddings = 128, s = 2.
transformers: base' = b * (s*L/C - (s-1))^(d/(d-2)) with L = the largest length seen so far."""

from __future__ import annotations

import pytest
import torch

from lm_eval_longmem.models.method_registry import MethodArgumentError, build_method
from tests.helpers.rope_helpers import load_with_method, token_ids

THETA = torch.tensor([1.0, 0.1, 0.01, 0.001], dtype=torch.float64)


def inv_freq(model) -> torch.Tensor:
    return model.model.rotary_emb.inv_freq.double()


def expected_for_base(base: float) -> torch.Tensor:
    return 1.0 / base ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8)


def test_hf_variant_uses_transformers_dynamic_type(tiny_model_dir):
    model = load_with_method(tiny_model_dir, "dynamic_ntk", variant="hf", s=2.0)
    assert model.config.rope_parameters["rope_type"] == "dynamic"
    assert model.config.rope_parameters["factor"] == 2.0
    assert model.config.rope_parameters["rope_theta"] == 10000.0
    assert not getattr(model.model.rotary_emb, "_longmem_length_scaled", False)  # transformers' update, not ours


def test_hf_variant_base_by_hand_and_memory_of_the_longest_length(tiny_model_dir):
    model = load_with_method(tiny_model_dir, "dynamic_ntk", variant="hf", s=2.0)
    frozen = load_with_method(tiny_model_dir, "dynamic_ntk", s=2.0)
    with torch.no_grad():
        for m in (model, frozen):
            m(token_ids(1, 256))
        # L = 256: t = 2*256/128 - 1 = 3, base = 10000 * 3^(4/3) = 43267.49
        base = 10000 * 3 ** (4 / 3)
        assert base == pytest.approx(43267.487, rel=1e-6)
        assert torch.allclose(inv_freq(model), expected_for_base(base), rtol=1e-5)
        assert torch.allclose(inv_freq(model), inv_freq(frozen), rtol=1e-5)  # same formula with C' = C
        for m in (model, frozen):
            m(token_ids(1, 192))
        # transformers keeps the base of the longest sequence seen (256), the study's uses 192's:
        # t = 2*192/128 - 1 = 2, base = 10000 * 2^(4/3)
        assert torch.allclose(inv_freq(model), expected_for_base(base), rtol=1e-5)
        assert torch.allclose(inv_freq(frozen), expected_for_base(10000 * 2 ** (4 / 3)), rtol=1e-5)
        for m in (model, frozen):
            m(token_ids(1, 60))  # shorter than C: transformers resets to plain RoPE
        assert torch.allclose(inv_freq(model), THETA, rtol=1e-6)
        assert torch.allclose(inv_freq(frozen), THETA, rtol=1e-6)


def test_hf_variant_matches_transformers_own_config(tiny_model_dir):
    """The same logits as a model whose config.json itself says rope_type=dynamic."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(tiny_model_dir)
    config.rope_parameters = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": config.rope_parameters["rope_theta"]}
    native = AutoModelForCausalLM.from_pretrained(tiny_model_dir, config=config, attn_implementation="sdpa").eval()
    ours = load_with_method(tiny_model_dir, "dynamic_ntk", variant="hf", s=2.0)
    ids = token_ids(1, 200)
    with torch.no_grad():
        assert torch.allclose(ours(ids).logits, native(ids).logits, atol=1e-5)


def test_variant_is_validated():
    assert build_method("dynamic_ntk", {}).args.variant == "frozen"
    with pytest.raises(MethodArgumentError, match="frozen"):
        build_method("dynamic_ntk", {"variant": "hf", "training_length": 256})
    with pytest.raises(MethodArgumentError, match="one of"):
        build_method("dynamic_ntk", {"variant": "yarn"})
