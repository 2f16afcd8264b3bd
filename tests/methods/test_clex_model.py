"""method=clex on a tiny Llama: plain RoPE below C, decoding equal to teacher forcing when t grows,
the authors' checkpoint format loaded and written, and one clear message for each bad input."""

from __future__ import annotations

import json
import logging

import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, DynamicCache

from lm_eval_longmem.models.clex.checkpoint import ClexCheckpointError, clex_of
from lm_eval_longmem.models.clex.generator import ClexGenerator
from lm_eval_longmem.models.clex.scaling import FactorLimitError
from lm_eval_longmem.models.method_registry import MethodArgumentError, build_method
from lm_eval_longmem.models.method_registry.resolution import resolve_method
from lm_eval_longmem.models.runtime.cache_argument import cache_argument
from lm_eval_longmem.models.runtime.generation import GenerationRequest
from tests.helpers.rope_helpers import load_with_method, token_ids

C = 8  # a short base length, so that t changes within a few tokens
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def official_clex_checkpoint(source, destination, param_factor=1, max_factor=4, log_scale=False, seed=1):
    """`source` (a tiny Llama) saved as the authors' code saves a CLEX model: rope_scaling of type clex,
    max_position_embeddings left at C, and the clex_layer tensors beside the ordinary weights."""
    import shutil

    shutil.copytree(source, destination)
    config = json.loads((destination / "config.json").read_text())
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    config.pop("rope_parameters", None)
    config.update(
        max_position_embeddings=C,
        rope_theta=10000.0,
        log_scale=log_scale,
        rope_scaling={
            "type": "clex",
            "max_factor": max_factor,
            "param_factor": param_factor,
            "act": "tanh",
            "time_dt": 0.05,
            "factor": 1,
        },
    )
    (destination / "config.json").write_text(json.dumps(config))
    weights = load_file(destination / "model.safetensors")
    generator = torch.Generator().manual_seed(seed)
    weights["model.clex_layer.inv_freq"] = 1.0 / 10000 ** (torch.arange(0, head_dim, 2).float() / head_dim)
    weights["model.clex_layer.proj_func.ode_up_proj"] = torch.randn(head_dim // 2, 1 * head_dim, generator=generator)
    weights["model.clex_layer.proj_func.ode_down_proj"] = 0.3 * torch.randn(
        head_dim, head_dim // 2, generator=generator
    )
    save_file(weights, destination / "model.safetensors", metadata={"format": "pt"})
    return destination


@pytest.fixture(scope="module")
def official_dir(tiny_model_dir, tmp_path_factory):
    return official_clex_checkpoint(tiny_model_dir, tmp_path_factory.mktemp("clex") / "official")


def logits(model, ids):
    with torch.no_grad():
        return model(ids).logits


def test_below_c_clex_is_the_unchanged_model(tiny_model_dir):
    ids = token_ids(2, 30)
    vanilla = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    clex = load_with_method(tiny_model_dir, "clex", max_factor=4)  # C = 128 > 30: t = 1
    torch.testing.assert_close(logits(clex, ids), logits(vanilla, ids), rtol=0, atol=1e-5)


@pytest.mark.parametrize("log_scale", [False, True])
def test_one_layers_cached_keys_follow_t_exactly(tiny_model_dir, tmp_path, log_scale):
    """Keys cached before RoPE and rotated with the current theta_t: in one layer, decoding token by
    token equals running each prefix at once across changes of t (above it, see the generator)."""
    config = json.loads((tiny_model_dir / "config.json").read_text())
    one_layer = tmp_path / "one_layer"
    AutoModelForCausalLM.from_config(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir).config.__class__(**{**config, "num_hidden_layers": 1})
    ).save_pretrained(one_layer)
    official = official_clex_checkpoint(one_layer, tmp_path / "official")
    model = load_with_method(official, "clex", log_scale=log_scale)
    ids = token_ids(1, 3 * C + 2)  # t goes 1 -> 2 -> 3 -> 4 while decoding
    cache = DynamicCache()
    with torch.no_grad():
        model(ids[:, :5], **cache_argument(cache), use_cache=True)
        for n in range(5, ids.shape[1]):
            step = model(ids[:, n : n + 1], **cache_argument(cache), use_cache=True).logits[:, -1]
            torch.testing.assert_close(step, logits(model, ids[:, : n + 1])[:, -1], rtol=0, atol=1e-6)
    assert clex_of(model).factors_used == {1, 2, 3, 4}


def test_generation_equals_teacher_forcing_across_changes_of_t(official_dir):
    """Two layers: the layers above the first cached states of the old t, so the generator encodes
    the sequence again when t grows; each step's logits are then those of the whole prefix."""
    model = load_with_method(official_dir, "clex")
    generator = ClexGenerator(model, clex_of(model))
    steps = []
    last_logits = generator._last_logits
    generator._last_logits = lambda ids, cache: steps.append(last_logits(ids, cache)) or steps[-1]
    prompt = token_ids(1, 5)[0].tolist()
    new = generator.generate(GenerationRequest(prompt_ids=tuple(prompt), max_new_tokens=3 * C - 3))
    sequence = torch.tensor([prompt + new])
    for n, step in enumerate(steps, start=len(prompt)):  # the logits after the first n tokens
        torch.testing.assert_close(step, logits(model, sequence[:, :n])[0, -1], rtol=0, atol=1e-5)
        assert new[n - len(prompt)] == int(step.argmax())  # greedy
    assert generator.encodes == 4  # the prompt (t = 1), then at 9, 17 and 25 tokens (t = 2, 3, 4)


def test_t_changes_the_scores_once_the_input_passes_c(official_dir):
    model = load_with_method(official_dir, "clex")
    ids = token_ids(1, 2 * C)
    with torch.no_grad():
        short = model(ids[:, :C]).logits
        long = model(ids).logits[:, :C]  # same tokens, read with t = 2
    assert not torch.allclose(short, long, atol=1e-4)


def test_the_authors_checkpoint_selects_clex_and_loads_its_ode(official_dir):
    resolved = resolve_method({"pretrained": str(official_dir)})
    assert resolved.name == "clex" and resolved.from_checkpoint
    method = resolved.build()
    model = load_with_method(official_dir, "clex")
    stored = load_file(official_dir / "model.safetensors")
    layer = clex_of(model)
    torch.testing.assert_close(layer.proj_func.ode_down_proj, stored["model.clex_layer.proj_func.ode_down_proj"])
    torch.testing.assert_close(layer.inv_freq, stored["model.clex_layer.inv_freq"])
    method.prepare_config(model.config.__class__.from_pretrained(official_dir))
    expected = {"max_factor": 4, "act": "tanh", "time_dt": 0.05, "log_scale": False, "param_factor": 1}
    assert method.resolved_args() == expected | {"original_length": C}
    assert method.context_length(C) == 4 * C


def test_no_trained_ode_warns_that_it_runs_ntk(tiny_model_dir, caplog):
    with caplog.at_level(logging.WARNING):
        load_with_method(tiny_model_dir, "clex")
    assert "NTK-aware scaling with factor 2t-1" in caplog.text


def test_a_length_past_the_limit_is_one_clear_error(official_dir):
    model = load_with_method(official_dir, "clex")
    with pytest.raises(FactorLimitError, match="C x max_factor"):
        logits(model, token_ids(1, 4 * C + 1))


def test_ode_shapes_that_do_not_match_the_config_are_refused(tiny_model_dir, tmp_path):
    wrong = official_clex_checkpoint(tiny_model_dir, tmp_path / "wrong")
    config = json.loads((wrong / "config.json").read_text())
    config["rope_scaling"]["param_factor"] = 2  # the stored U/D were made with 1
    (wrong / "config.json").write_text(json.dumps(config))
    with pytest.raises(ClexCheckpointError, match="param_factor=2"):
        load_with_method(wrong, "clex")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"act": "relu"}, "act"),
        ({"max_factor": 0}, "max_factor"),
        ({"time_dt": 0}, "time_dt"),
        ({"param_factor": 0}, "param_factor"),
    ],
)
def test_bad_arguments_get_one_message(args, message):
    with pytest.raises(MethodArgumentError, match=message):
        build_method("clex", args)
