"""FoX model package: faithfulness to the paper/official code, loading, caching, generation."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache

from lm_eval_longmem.models.fox import (
    ForgettingTransformerCache,
    ForgettingTransformerConfig,
    ForgettingTransformerForCausalLM,
    TransformerBaselineConfig,
    TransformerBaselineForCausalLM,
    is_fox_config,
)
from lm_eval_longmem.models.fox.attention import ForgettingAttentionLayer
from lm_eval_longmem.models.fox.rotary import apply_rotary
from lm_eval_longmem.models.runtime.prefix_reuse_generator import cache_is_croppable

TINY = dict(
    vocab_size=97, hidden_size=32, num_hidden_layers=2, num_heads=4, max_position_embeddings=None, eos_token_id=None
)
PRO = dict(
    use_k_shift=True,
    use_v_shift=True,
    qk_norm=True,
    qk_norm_share_param_across_head=True,
    use_output_gate=True,
    use_output_norm=True,
    hidden_ratio=3.5,
)
# The four released variants (official configs/experiment/longcrawl64/*/*_760m_48b.yaml):
# transformer-llama uses the separate `transformer-project_fox` model type.
VARIANTS = {
    "fox-llama": (ForgettingTransformerConfig, {}),
    "fox-pro": (ForgettingTransformerConfig, PRO),
    "transformer-pro": (ForgettingTransformerConfig, dict(PRO, use_rope=True, fgate_type="none")),
    "transformer-llama": (TransformerBaselineConfig, {}),
}


def tiny_model(variant: str = "fox-pro", seed: int = 0, **overrides) -> ForgettingTransformerForCausalLM:
    config_class, options = VARIANTS[variant]
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config_class(**{**TINY, **options, **overrides}))
    # Larger gate weights than the init's 0.02 so that forgetting visibly matters in the tests.
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "fgate_proj" in name or "shift_proj" in name:
                param.normal_(0.0, 0.5)
    return model.eval()


def single_layer_attention(**overrides) -> ForgettingAttentionLayer:
    """One head of width 2 with identity q/k/v/o projections, for hand computations."""
    config = ForgettingTransformerConfig(**{**dict(TINY, hidden_size=2, num_heads=1), **overrides})
    layer = ForgettingAttentionLayer(config, layer_idx=0)
    with torch.no_grad():
        for proj in (layer.q_proj, layer.o_proj):
            proj.weight.copy_(torch.eye(2))
        for proj in (layer.k_proj, layer.v_proj):
            getattr(proj, "linear", proj).weight.copy_(torch.eye(2))
    return layer


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# --- the decay term, by hand -----------------------------------------------------------------


def test_three_token_forgetting_attention_by_hand():
    layer = single_layer_attention()
    w, b = [0.5, -1.0], 0.3
    with torch.no_grad():
        layer.fgate_proj.weight.copy_(torch.tensor([w]))
        layer.fgate_proj.bias.fill_(b)
    x = [[1.0, 0.0], [0.5, 2.0], [-1.0, 1.0]]
    out = layer(torch.tensor([x]))[0]

    log_f = [math.log(sigmoid(w[0] * t[0] + w[1] * t[1] + b)) for t in x]
    c = [sum(log_f[: i + 1]) for i in range(3)]
    for i in range(3):
        logits = [(x[i][0] * x[j][0] + x[i][1] * x[j][1]) / math.sqrt(2) + c[i] - c[j] for j in range(i + 1)]
        weights = [math.exp(s) for s in logits]
        total = sum(weights)
        expected = [sum(weights[j] * x[j][d] for j in range(i + 1)) / total for d in range(2)]
        assert out[i].tolist() == pytest.approx(expected, abs=1e-6)


def test_no_forget_gate_is_plain_causal_softmax():
    layer = single_layer_attention(fgate_type="none")
    x = torch.tensor([[[1.0, 0.0], [0.5, 2.0], [-1.0, 1.0]]])
    scores = (x[0] @ x[0].T) / math.sqrt(2) + torch.triu(torch.full((3, 3), float("-inf")), diagonal=1)
    assert torch.allclose(layer(x)[0], scores.softmax(-1) @ x[0], atol=1e-6)


# --- Pro components, by hand (one token: attention returns its own value) --------------------


@pytest.mark.parametrize("activation", ["sigmoid", "silu"])
def test_output_gate_without_norm(activation):
    layer = single_layer_attention(use_output_gate=True, ogate_act=activation)
    gate_weight = [[0.3, -0.7], [1.1, 0.4]]
    with torch.no_grad():
        layer.ogate_proj.weight.copy_(torch.tensor(gate_weight))
    x = [0.8, -1.5]
    out = layer(torch.tensor([[x]]))[0, 0].tolist()
    for d in range(2):
        g = gate_weight[d][0] * x[0] + gate_weight[d][1] * x[1]
        act = sigmoid(g) if activation == "sigmoid" else g * sigmoid(g)
        assert out[d] == pytest.approx(act * x[d], abs=1e-6)


def test_output_norm_fused_with_sigmoid_gate():
    layer = single_layer_attention(use_output_gate=True, use_output_norm=True, norm_eps=1e-6)
    gate_weight = [[0.3, -0.7], [1.1, 0.4]]
    with torch.no_grad():
        layer.ogate_proj.weight.copy_(torch.tensor(gate_weight))
        layer.output_norm.weight.copy_(torch.tensor([2.0, 0.5]))
    x = [0.8, -1.5]
    out = layer(torch.tensor([[x]]))[0, 0].tolist()
    rms = math.sqrt((x[0] ** 2 + x[1] ** 2) / 2 + 1e-6)
    for d, scale in enumerate([2.0, 0.5]):
        g = gate_weight[d][0] * x[0] + gate_weight[d][1] * x[1]
        assert out[d] == pytest.approx(x[d] / rms * scale * sigmoid(g), abs=1e-6)


@pytest.mark.parametrize("shared", [True, False])
def test_qk_norm_scales(shared):
    config = ForgettingTransformerConfig(**TINY, qk_norm=True, qk_norm_share_param_across_head=shared)
    model = ForgettingTransformerForCausalLM(config).eval()
    attn = model.model.layers[0].attn
    head_dim = config.head_dim
    expected_shape = (head_dim,) if shared else (config.hidden_size,)
    assert attn.q_norm.weight.shape == attn.k_norm.weight.shape == expected_shape
    with torch.no_grad():
        attn.k_norm.weight.copy_(torch.linspace(0.5, 2.0, expected_shape[0]))
    cache = ForgettingTransformerCache(config=config)
    hidden = torch.randn(1, 3, config.hidden_size)
    attn(hidden, cache.layers[0])
    raw = (hidden @ attn.k_proj.weight.T)[0].tolist()
    scale = attn.k_norm.weight.tolist()
    cached = cache.layers[0].keys[0]
    for t in range(3):
        for h in range(config.num_heads):
            chunk = raw[t][h * head_dim : (h + 1) * head_dim]
            rms = math.sqrt(sum(v * v for v in chunk) / head_dim + 1e-5)
            channel_scale = scale if shared else scale[h * head_dim : (h + 1) * head_dim]
            expected = [v / rms * s for v, s in zip(chunk, channel_scale)]
            assert cached[t, h].tolist() == pytest.approx(expected, abs=1e-5)


def test_kv_shift_mixes_previous_pre_shift_projection():
    config = ForgettingTransformerConfig(**TINY, use_k_shift=True)
    model = ForgettingTransformerForCausalLM(config).eval()
    attn = model.model.layers[0].attn
    cache = ForgettingTransformerCache(config=config)
    hidden = torch.randn(2, 4, config.hidden_size)
    # Row 1 is left-padded by one token: its first real token mixes with zero.
    attn(hidden, cache.layers[0], seq_start=torch.tensor([0, 1]))
    raw = (hidden @ attn.k_proj.linear.weight.T).tolist()
    alpha_logits = (hidden @ attn.k_proj.shift_proj.weight.T).tolist()
    head_dim, keys = config.head_dim, cache.layers[0].keys
    for b, first in ((0, 0), (1, 1)):
        for t in range(first, 4):
            for h in range(config.num_heads):
                alpha = sigmoid(alpha_logits[b][t][h])
                cur = raw[b][t][h * head_dim : (h + 1) * head_dim]
                prev = raw[b][t - 1][h * head_dim : (h + 1) * head_dim] if t > first else [0.0] * head_dim
                expected = [alpha * p + (1 - alpha) * c for p, c in zip(prev, cur)]
                assert keys[b, t, h].tolist() == pytest.approx(expected, abs=1e-5)
    # The cache keeps the pre-shift projections (zeroed at padding) for decoding and crop.
    assert torch.allclose(cache.layers[0].key_inputs[0], torch.tensor(raw[0]), atol=1e-6)
    assert not cache.layers[0].key_inputs[1, 0].any()


def test_rotary_is_rotate_half():
    x = torch.tensor([[[[1.0, 2.0, 3.0, 4.0]]]])
    out = apply_rotary(x, torch.tensor([[3]]), base=100.0)[0, 0, 0].tolist()
    expected = []
    angles = [3 * 100.0 ** (-0 / 4), 3 * 100.0 ** (-2 / 4)]
    first, second = [1.0, 2.0], [3.0, 4.0]
    expected = [first[i] * math.cos(angles[i]) - second[i] * math.sin(angles[i]) for i in range(2)]
    expected += [first[i] * math.sin(angles[i]) + second[i] * math.cos(angles[i]) for i in range(2)]
    assert out == pytest.approx(expected, abs=1e-6)


# --- gate initialisation ----------------------------------------------------------------------


@pytest.mark.parametrize("fgate_type", ["bias_only", "fixed"])
def test_data_independent_gate_bias_init(fgate_type):
    config = ForgettingTransformerConfig(
        **TINY, fgate_type=fgate_type, fgate_bias_init=True, decay_time_min=2.0, decay_time_max=1000.0
    )
    model = ForgettingTransformerForCausalLM(config)
    attn = model.model.layers[1].attn
    heads = config.num_heads
    times = [math.exp(math.log(2.0) + i * (math.log(1000.0) - math.log(2.0)) / (heads - 1)) for i in range(heads)]
    expected = [-math.log(math.expm1(1.0 / t)) for t in times]
    assert attn.fgate_bias.tolist() == pytest.approx(expected, rel=1e-5)
    # The bias means: head h forgets with time constant T_h = -1 / log f.
    decay = (-1.0 / torch.nn.functional.logsigmoid(attn.fgate_bias.double())).tolist()
    assert decay == pytest.approx(times, rel=1e-4)
    trainable = {name for name, _ in model.named_parameters()}
    assert ("model.layers.1.attn.fgate_bias" in trainable) == (fgate_type == "bias_only")
    assert "model.layers.1.attn.fgate_bias" in model.state_dict()


def test_full_gate_bias_starts_at_zero():
    model = ForgettingTransformerForCausalLM(ForgettingTransformerConfig(**TINY))
    for block in model.model.layers:
        assert not block.attn.fgate_proj.bias.any()
        assert block.attn.fgate_proj.weight.std() > 0


# --- parameter names of the released checkpoints --------------------------------------------


# Read from the official modeling_forgetting_transformer.py (ForgettingAttentionLayer,
# ShiftLinear, ForgettingTransformerMLP/Block/Model/ForCausalLM; fla-style RMSNorm/GroupNorm with
# a single `weight`, no bias) and modeling_transformer.py (same names, no gate): per-block names
# with their shapes for hidden 1536, 24 layers, vocab 50257 (LongCrawl64's GPT-2 vocabulary).
def official_block_shapes(pro: bool, gated: bool, heads: int) -> dict[str, tuple]:
    hidden, head_dim = 1536, 1536 // heads
    width = 3584 if pro else 4096  # 256-rounded 2/3 * hidden * hidden_ratio (3.5 Pro, 4 LLaMA)
    names = {
        "attn_norm.weight": (hidden,),
        "attn.q_proj.weight": (hidden, hidden),
        "attn.o_proj.weight": (hidden, hidden),
        "mlp_norm.weight": (hidden,),
        "mlp.gate_proj.weight": (2 * width, hidden),
        "mlp.down_proj.weight": (hidden, width),
    }
    if pro:
        for kv in ("k", "v"):
            names[f"attn.{kv}_proj.linear.weight"] = (hidden, hidden)
            names[f"attn.{kv}_proj.shift_proj.weight"] = (heads, hidden)
        names.update(
            {
                "attn.ogate_proj.weight": (hidden, hidden),
                "attn.output_norm.weight": (hidden,),
                "attn.q_norm.weight": (head_dim,),
                "attn.k_norm.weight": (head_dim,),
            }
        )
    else:
        names.update({"attn.k_proj.weight": (hidden, hidden), "attn.v_proj.weight": (hidden, hidden)})
    if gated:
        names.update({"attn.fgate_proj.weight": (heads, hidden), "attn.fgate_proj.bias": (heads,)})
    return names


RELEASED = {  # variant: (pro, gated, heads) from the official 760m_48b experiment configs
    "fox-pro": (True, True, 24),
    "fox-llama": (False, True, 24),
    "transformer-pro": (True, False, 12),
    "transformer-llama": (False, False, 12),
}


@pytest.mark.parametrize("variant", sorted(RELEASED))
def test_parameter_names_and_shapes_match_the_official_checkpoints(variant):
    pro, gated, heads = RELEASED[variant]
    config_class, options = VARIANTS[variant]
    config = config_class(
        **{**options, "vocab_size": 50257, "hidden_size": 1536, "num_hidden_layers": 24, "num_heads": heads}
    )
    with torch.device("meta"):
        model = ForgettingTransformerForCausalLM(config)
    shapes = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    expected = {"model.embeddings.weight": (50257, 1536), "model.norm.weight": (1536,), "lm_head.weight": (50257, 1536)}
    for layer in range(24):
        expected.update({f"model.layers.{layer}.{k}": v for k, v in official_block_shapes(pro, gated, heads).items()})
    assert shapes == expected


# --- caching and generation -------------------------------------------------------------------


def greedy_by_recomputation(model, prompt: list[int], steps: int) -> list[int]:
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(steps):
            logits = model(torch.tensor([ids]), use_cache=False).logits[0, -1]
            ids.append(int(logits.argmax()))
    return ids[len(prompt) :]


@pytest.mark.parametrize("variant", ["fox-llama", "fox-pro", "transformer-pro"])
def test_cached_generation_with_left_padding_equals_recomputation(variant):
    model = tiny_model(variant)
    prompts = [[5, 17, 3, 88, 41, 9, 60], [12, 7, 33, 2]]
    pad = 0
    width = max(map(len, prompts))
    input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    attention_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    with torch.no_grad():
        generated = model.generate(
            input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=8, do_sample=False, pad_token_id=pad
        )
    for row, prompt in enumerate(prompts):
        assert generated[row, width:].tolist() == greedy_by_recomputation(model, prompt, 8)


def test_left_padded_logits_equal_unpadded_logits():
    model = tiny_model("fox-pro")
    prompt = [4, 8, 15, 16, 23]
    with torch.no_grad():
        plain = model(torch.tensor([prompt])).logits[0]
        padded = model(torch.tensor([[0, 0] + prompt]), attention_mask=torch.tensor([[0, 0, 1, 1, 1, 1, 1]])).logits
    assert torch.allclose(padded[0, 2:], plain, atol=1e-5)


@pytest.mark.parametrize("variant", ["fox-pro", "transformer-pro"])
def test_chunked_prefill_equals_one_pass(variant):
    model = tiny_model(variant)
    ids = torch.randint(1, 97, (2, 11), generator=torch.Generator().manual_seed(3))
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    with torch.no_grad():
        full = model(ids, attention_mask=mask).logits
        cache = ForgettingTransformerCache(config=model.config)
        pieces = []
        for start, end in ((0, 4), (4, 5), (5, 11)):
            out = model(ids[:, start:end], attention_mask=mask[:, :end], past_key_values=cache, use_cache=True)
            pieces.append(out.logits)
    assert cache.get_seq_length() == 11
    assert torch.allclose(torch.cat(pieces, dim=1)[0], full[0], atol=1e-5)
    assert torch.allclose(torch.cat(pieces, dim=1)[1, 3:], full[1, 3:], atol=1e-5)


def test_crop_then_continue_equals_fresh_prefill():
    model = tiny_model("fox-pro")
    ids = torch.randint(1, 97, (1, 10), generator=torch.Generator().manual_seed(5))
    other = torch.tensor([[70, 71, 72]])
    with torch.no_grad():
        cache = ForgettingTransformerCache(config=model.config)
        model(ids, past_key_values=cache, use_cache=True)
        cache.crop(-4)  # keep the first 6 tokens
        assert cache.get_seq_length() == 6
        continued = model(other, past_key_values=cache, use_cache=True).logits
        fresh = model(torch.cat([ids[:, :6], other], dim=1), use_cache=False).logits[:, 6:]
    assert torch.allclose(continued, fresh, atol=1e-5)


def test_generate_adopts_an_empty_dynamic_cache_and_reuses_it_after_crop():
    """The prefix-reuse generator's path: generate into `DynamicCache(config=...)`, crop to a
    shared prefix, generate again from the same cache object."""
    model = tiny_model("fox-pro")
    first, second = [3, 14, 15, 92, 65, 35], [3, 14, 15, 92, 8, 9, 79]
    cache = DynamicCache(config=model.config)
    with torch.no_grad():
        ids = torch.tensor([first])
        model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            past_key_values=cache,
            max_new_tokens=4,
            do_sample=False,
            pad_token_id=0,
        )
        # (cache_is_croppable: transformers 5.2 has no `DynamicCache.is_croppable`, 5.24 has)
        assert cache.get_seq_length() == len(first) + 3 and cache_is_croppable(cache)
        cache.crop(4 - cache.get_seq_length())
        ids = torch.tensor([second])
        out = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            past_key_values=cache,
            max_new_tokens=5,
            do_sample=False,
            pad_token_id=0,
        )
    assert out[0, len(second) :].tolist() == greedy_by_recomputation(model, second, 5)


def test_cache_batch_operations():
    model = tiny_model("fox-pro")
    ids = torch.randint(1, 97, (2, 5), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values
        cache.batch_repeat_interleave(2)
        assert cache.layers[0].keys.shape[0] == 4 and cache.layers[0].key_inputs.shape[0] == 4
        cache.batch_select_indices(torch.tensor([2]))
        step = model(torch.tensor([[7]]), past_key_values=cache, use_cache=True).logits[0, -1]
        full = model(torch.cat([ids[1:], torch.tensor([[7]])], dim=1), use_cache=False).logits[0, -1]
    assert torch.allclose(step, full, atol=1e-5)


# --- interface --------------------------------------------------------------------------------


def test_logits_to_keep_hidden_states_and_tuples():
    model = tiny_model("fox-llama")
    ids = torch.randint(1, 97, (1, 6), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = model(ids).logits
        # the head over 2 rows vs 6 rows: another blocking of the same sums (float32 rounding apart)
        torch.testing.assert_close(model(ids, logits_to_keep=2).logits, full[:, -2:])
        torch.testing.assert_close(model(ids, logits_to_keep=torch.tensor([0, 3])).logits, full[:, [0, 3]])
        out = model(ids, output_hidden_states=True)
        assert len(out.hidden_states) == model.config.num_hidden_layers + 1
        body = model.model(input_ids=ids, use_cache=False).last_hidden_state
        assert torch.allclose(model.get_output_embeddings()(body), full)
        as_tuple = model(ids, use_cache=False, return_dict=False)
        assert torch.allclose(as_tuple[0], full)


def test_labels_loss_is_shifted_cross_entropy_and_reaches_the_forget_gate():
    model = tiny_model("fox-pro").train()
    ids = torch.randint(1, 97, (2, 8), generator=torch.Generator().manual_seed(4))
    labels = ids.clone()
    labels[0, :3] = -100
    out = model(ids, labels=labels)
    logits = out.logits[:, :-1].reshape(-1, 97)
    expected = torch.nn.functional.cross_entropy(logits, labels[:, 1:].reshape(-1), ignore_index=-100)
    assert torch.allclose(out.loss, expected)
    out.loss.backward()
    for block in model.model.layers:
        assert block.attn.fgate_proj.weight.grad.abs().sum() > 0
        assert block.attn.fgate_proj.bias.grad.abs().sum() > 0


def test_gradient_checkpointing_gives_the_same_loss_and_gradients():
    ids = torch.randint(1, 97, (1, 8), generator=torch.Generator().manual_seed(6))
    results = []
    for checkpointing in (False, True):
        model = tiny_model("fox-pro").train()
        if checkpointing:
            enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
            enable()
        loss = model(ids, labels=ids).loss
        loss.backward()
        results.append((loss.detach(), model.model.layers[0].attn.fgate_proj.weight.grad.clone()))
    assert torch.allclose(results[0][0], results[1][0])
    assert torch.allclose(results[0][1], results[1][1], atol=1e-6)


@pytest.mark.parametrize("variant", ["fox-pro", "transformer-llama"])
def test_save_and_load_round_trip(tmp_path, variant):
    model = tiny_model(variant)
    model.save_pretrained(tmp_path)
    config = AutoConfig.from_pretrained(tmp_path)
    assert is_fox_config(config) and type(config) is VARIANTS[variant][0]
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert isinstance(loaded, TransformerBaselineForCausalLM) == (variant == "transformer-llama")
    reference, restored = model.state_dict(), loaded.state_dict()
    assert reference.keys() == restored.keys()
    assert all(torch.equal(reference[k], restored[k]) for k in reference)
    ids = torch.randint(1, 97, (1, 7), generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        assert torch.equal(model(ids).logits, loaded(ids).logits)


def test_fixed_gate_buffer_survives_save_and_load(tmp_path):
    model = tiny_model("fox-llama", fgate_type="fixed", fgate_bias_init=True, decay_time_min=4, decay_time_max=64)
    with torch.no_grad():
        model.model.layers[0].attn.fgate_bias.add_(0.25)
    model.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert torch.equal(loaded.model.layers[0].attn.fgate_bias, model.model.layers[0].attn.fgate_bias)


def test_transformer_baseline_defaults_and_auto_registration():
    config = AutoConfig.for_model("transformer-project_fox", **TINY)
    assert config.use_rope and config.fgate_type == "none"
    model = AutoModelForCausalLM.from_config(config)
    assert isinstance(model, TransformerBaselineForCausalLM)
    assert not any("fgate" in name for name in model.state_dict())
    fox = AutoModelForCausalLM.from_config(AutoConfig.for_model("forgetting_transformer-project_fox", **TINY))
    assert type(fox) is ForgettingTransformerForCausalLM


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(fgate_type="sometimes"), "valid values: 'full', 'bias_only', 'fixed', 'none'"),
        (dict(fgate_type="fixed"), "fgate_bias_init=True"),
        (dict(fgate_bias_init=True, decay_time_min=1, decay_time_max=10), "'bias_only' or 'fixed'"),
        (dict(fgate_type="bias_only", fgate_bias_init=True), "positive decay_time_min"),
        (dict(window_size=128), "sliding-window"),
        (dict(num_kv_heads=2), "grouped-query"),
        (dict(ogate_act="relu"), "valid values: 'sigmoid', 'silu'"),
    ],
)
def test_bad_configs_are_rejected_clearly(options, message):
    with pytest.raises(ValueError, match=message):
        ForgettingTransformerConfig(**{**TINY, **options})


def test_masks_other_than_left_padding_are_rejected():
    model = tiny_model("fox-llama")
    with pytest.raises(ValueError, match="left padding only"):
        model(torch.tensor([[1, 2, 3]]), attention_mask=torch.tensor([[1, 0, 1]]))


def test_loads_a_config_json_written_by_the_official_code(tmp_path):
    """Keys as the official save path writes them (hydra defaults: no bos/eos, 4.44 metadata)."""
    import json

    model = tiny_model("fox-pro")
    model.save_pretrained(tmp_path)
    config_path = tmp_path / "config.json"
    written = json.loads(config_path.read_text())
    missing = set(ForgettingTransformerConfig().to_dict()) - set(written)
    written.update(
        architectures=["ForgettingTransformerForCausalLM"],
        bos_token_id=None,
        eos_token_id=None,
        torch_dtype="float32",
        transformers_version="4.44.0",
    )
    config_path.write_text(json.dumps(written))
    assert not {"fgate_type", "qk_norm_share_param_across_head", "use_k_shift"} & missing
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    ids = torch.tensor([[4, 5, 6]])
    with torch.no_grad():
        assert torch.equal(model(ids).logits, loaded(ids).logits)
