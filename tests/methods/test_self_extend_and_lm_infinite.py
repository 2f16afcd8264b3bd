"""Self-Extend and LM-Infinite: position mappings (eq. 13, min(n-m, C)), the two-part attention
against a per-pair reference, equality with vanilla when the windows cover the sequence,
cached generation against full recomputation, and the raised max_length."""

from __future__ import annotations

import sys

import pytest
import torch

import lm_eval_longmem.models.attention.band_attention as band_attention_module
import lm_eval_longmem.models.attention.part_attention as part_attention_module
from lm_eval_longmem.models.attention.band_attention import band_attention
from lm_eval_longmem.models.attention.lm_infinite import LMInfiniteRule, lm_infinite_distance
from lm_eval_longmem.models.attention.part_attention import part_attention
from lm_eval_longmem.models.attention.self_extend import SelfExtendRule, self_extend_distance
from tests.helpers.rope_helpers import load_with_method, token_ids

# --- position mappings, by hand -------------------------------------------------------------


def test_self_extend_distance_by_hand():
    # M = 4, N = 2. Within the window the true distance:
    assert self_extend_distance(10, 6, 4, 2) == 4
    # m = 11, n = 3: grouped positions 11//2 + 4 - 4//2 = 7 and 3//2 = 1 -> 6;
    # eq. 13: 4 + floor(8/2) - floor(4/2) = 6 (equal: m mod N >= n mod N)
    assert self_extend_distance(11, 3, 4, 2) == 6 == 4 + (11 - 3) // 2 - 4 // 2
    # m = 10, n = 3: grouped 5 + 2 - 1 = 6; eq. 13 gives 4 + 3 - 2 = 5 (m mod N < n mod N: one more)
    assert self_extend_distance(10, 3, 4, 2) == 6
    assert 4 + (10 - 3) // 2 - 4 // 2 == 5


def test_self_extend_distance_within_one_of_eq_13_and_within_training_length():
    window, group, training = 16, 4, 64
    longest = (training - window) * group + window  # the paper's maximum extended length
    for m in range(0, longest, 7):
        for n in range(0, m + 1, 3):
            r = self_extend_distance(m, n, window, group)
            eq13 = m - n if m - n <= window else window + (m - n) // group - window // group
            assert 0 <= r - eq13 <= 1
            assert r < training


def test_lm_infinite_distance_by_hand():
    # G = 2, M = 3, C = 5: query 9 sees keys 0, 1 (global) and 7, 8, 9 (local)
    seen = {n: lm_infinite_distance(9, n, 2, 3, 5) for n in range(10)}
    assert seen == {0: 5, 1: 5, 2: None, 3: None, 4: None, 5: None, 6: None, 7: 2, 8: 1, 9: 0}


# --- the two-part attention against a per-pair reference ---------------------------------------

HEAD_DIM, HEADS, KV_HEADS = 8, 4, 2


def rotate(x, pos, inv_freq):
    """RoPE at integer positions, written out: pairs (i, i + d/2) rotated by pos * theta_i."""
    angle = pos.double()[..., None] * inv_freq.double()
    cos, sin = angle.cos(), angle.sin()
    x1, x2 = x[..., : HEAD_DIM // 2].double(), x[..., HEAD_DIM // 2 :].double()
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def reference_attention(q_raw, k_raw, v, distance_of, scaling, inv_freq):
    """softmax over visible keys of q . R(r(m, n)) k, computed pair by pair (float64)."""
    batch, heads, length, _ = q_raw.shape
    out = torch.zeros(batch, heads, length, HEAD_DIM, dtype=torch.float64)
    k_raw = k_raw.repeat_interleave(heads // k_raw.shape[1], dim=1)
    v = v.repeat_interleave(heads // v.shape[1], dim=1).double()
    for m in range(length):
        keys = [n for n in range(m + 1) if distance_of(m, n) is not None]
        r = torch.tensor([distance_of(m, n) for n in keys])
        q_at_r = rotate(q_raw[:, :, m : m + 1].expand(-1, -1, len(keys), -1), r, inv_freq)  # key at 0
        scores = (q_at_r * k_raw[:, :, keys].double()).sum(-1) * scaling
        out[:, :, m] = torch.einsum("bhk,bhkd->bhd", scores.softmax(-1), v[:, :, keys])
    return out.transpose(1, 2)


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few queries, so the tests cross block boundaries."""
    monkeypatch.setattr(part_attention_module, "_SDPA_BLOCK_QUERIES", 5)
    monkeypatch.setattr(part_attention_module, "_EAGER_BLOCK_ELEMENTS", 5 * HEADS * 2 * 40)
    monkeypatch.setattr(part_attention_module, "_block_size", lambda *a: 5)


def random_qkv(length, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, HEADS, length, HEAD_DIM, generator=g)
    k = torch.randn(1, KV_HEADS, length, HEAD_DIM, generator=g)
    v = torch.randn(1, KV_HEADS, length, HEAD_DIM, generator=g)
    return q, k, v


RULES = [
    (SelfExtendRule(window=4, group=3), lambda m, n: self_extend_distance(m, n, 4, 3)),
    (LMInfiniteRule(global_tokens=2, window=5, clamp=7), lambda m, n: lm_infinite_distance(m, n, 2, 5, 7)),
    (LMInfiniteRule(global_tokens=3, window=9, clamp=6), lambda m, n: lm_infinite_distance(m, n, 3, 9, 6)),
]
RULE_IDS = ["self_extend", "lm_infinite", "lm_infinite_window_beyond_clamp"]


@pytest.mark.parametrize("backend", ["sdpa", "eager"])
@pytest.mark.parametrize("rule, distance_of", RULES, ids=RULE_IDS)
def test_part_attention_matches_per_pair_reference(rule, distance_of, backend, small_blocks, device):
    length, scaling = 23, HEAD_DIM**-0.5
    inv_freq = 1.0 / (100.0 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
    q_raw, k_raw, v = random_qkv(length)
    pos = torch.arange(length)[None]
    q, k = rotate(q_raw, pos, inv_freq).float(), rotate(k_raw, pos, inv_freq).float()
    on = lambda *xs: [x.to(device) for x in xs]  # noqa: E731
    ours = part_attention(rule, *on(q, k, v), None, scaling, *on(pos, inv_freq), backend).cpu()
    expected = reference_attention(q_raw, k_raw, v, distance_of, scaling, inv_freq)
    assert torch.allclose(ours.double(), expected, atol=1e-5)
    # decoding: the last query alone against the full cache gives the same row
    last = part_attention(rule, *on(q[:, :, -1:], k, v), None, scaling, *on(pos[:, -1:], inv_freq), backend).cpu()
    assert torch.allclose(last.double(), expected[:, -1:], atol=1e-5)


def emulated_flash(
    q, k, v, cum_q, cum_k, max_q, max_k, dropout, is_causal, debug, *, scale, window_size_left, window_size_right
):
    """FlashAttention's forward written out ([batch, seq, heads, dim]; causal aligned to the
    bottom right, window_size_left keys before the diagonal), to check band_attention's
    slicing on the CPU; the CUDA tests below run the real kernel."""
    assert is_causal and window_size_right == 0 and not dropout
    q, k, v = (x.transpose(1, 2).double() for x in (q, k, v))
    k, v = (x.repeat_interleave(q.shape[1] // x.shape[1], dim=1) for x in (k, v))
    i, j = torch.arange(q.shape[2])[:, None], torch.arange(k.shape[2])[None, :]
    diagonal = i + (k.shape[2] - q.shape[2])
    allowed = (j <= diagonal) & ((j >= diagonal - window_size_left) if window_size_left >= 0 else True)
    scores = (q @ k.transpose(-1, -2) * scale).masked_fill(~allowed, float("-inf"))
    lse = scores.logsumexp(-1)
    return (scores.softmax(-1) @ v).transpose(1, 2).float(), lse.float(), None, None, None


@pytest.mark.parametrize("rule, distance_of", RULES, ids=RULE_IDS)
def test_band_pieces_match_the_per_pair_reference(rule, distance_of, monkeypatch):
    """The fast path's pieces (distance bands + global keys) cover each part exactly once."""
    monkeypatch.setattr(band_attention_module, "_FLASH", emulated_flash)
    length, scaling = 23, HEAD_DIM**-0.5
    inv_freq = 1.0 / (100.0 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
    q_raw, k_raw, v = random_qkv(length)
    pos = torch.arange(length)[None]
    q, k = rotate(q_raw, pos, inv_freq).float(), rotate(k_raw, pos, inv_freq).float()
    expected = reference_attention(q_raw, k_raw, v, distance_of, scaling, inv_freq)
    ours = band_attention(rule, q, k, v, scaling, pos, inv_freq)
    assert torch.allclose(ours.double(), expected, atol=1e-5)
    for first in (22, 15):  # a decoding step, and a chunk of queries after a cached prefix
        part = band_attention(rule, q[:, :, first:], k, v, scaling, pos[:, first:], inv_freq)
        assert torch.allclose(part.double(), expected[:, first:], atol=1e-5)


def test_band_path_scores_only_the_global_keys_directly(monkeypatch):
    """Everything but the G global tokens goes through the fused kernel; the global tokens
    alone are scored directly (not the whole past, which would cost L x L memory)."""
    monkeypatch.setattr(band_attention_module, "_FLASH", emulated_flash)
    widths = []

    def spy(q, k, v, mask, scaling, groups):
        widths.append(k.shape[2])
        return part_attention_module.explicit_attention(q, k, v, mask, scaling, groups)

    monkeypatch.setattr(band_attention_module, "explicit_attention", spy)
    q, k, v = random_qkv(200)
    pos = torch.arange(200)[None]
    inv_freq = 1.0 / (100.0 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
    band_attention(LMInfiniteRule(global_tokens=3, window=50, clamp=50), q, k, v, HEAD_DIM**-0.5, pos, inv_freq)
    assert widths and max(widths) == 3


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("backend", ["sdpa", "eager"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "rule",
    [SelfExtendRule(window=100, group=7), LMInfiniteRule(global_tokens=10, window=300, clamp=200)],
    ids=["self_extend", "lm_infinite"],
)
def test_half_precision_on_cuda_matches_the_fp32_path(rule, backend, dtype):
    """The real FlashAttention bands, and the blocked path in half precision, against the
    blocked path in fp32; long enough for several query blocks and the kernels' padding."""
    length, scaling, head_dim = 1500, 64**-0.5, 64
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, h, length, head_dim, generator=g).cuda() for h in (HEADS, KV_HEADS, KV_HEADS))
    inv_freq = (1.0 / (10000.0 ** (torch.arange(0, head_dim, 2).float() / head_dim))).cuda()
    pos = torch.arange(length, device="cuda")[None]
    full = part_attention(rule, q, k, v, None, scaling, pos, inv_freq, "sdpa").double()
    half = [x.to(dtype) for x in (q, k, v)]
    outputs = {"blocked": part_attention(rule, *half, None, scaling, pos, inv_freq, backend)}
    if backend == "sdpa":
        outputs["bands"] = band_attention(rule, *half, scaling, pos, inv_freq)
        tail = band_attention(rule, half[0][:, :, -37:], *half[1:], scaling, pos[:, -37:], inv_freq)
        assert ((tail.double() - full[:, -37:]).norm() / full[:, -37:].norm()) < 1e-2
    for name, out in outputs.items():
        assert torch.isfinite(out).all(), name
        relative = (out.double() - full).norm() / full.norm()
        assert relative < 1e-2, (name, relative)


# --- on a model ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vanilla_logits(tiny_model_dir):
    ids = token_ids(2, 60)
    with torch.no_grad():
        return ids, load_with_method(tiny_model_dir, "vanilla").forward(ids).logits


FACTOR_ONE = {
    "pi": {"factor": 1.0},
    "ntk": {"factor": 1.0},
    "yarn": {"factor": 1.0},
    "llama3": {"factor": 1.0},
    "dynamic_ntk": {"s": 1.0},
    "self_extend": {"window": 64, "group": 4},  # window >= sequence: nothing grouped
    "lm_infinite": {"global_tokens": 4},  # local window = C = 128 >= sequence, no clamping
}


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("method", sorted(FACTOR_ONE))
def test_neutral_settings_equal_vanilla(tiny_model_dir, vanilla_logits, method, attn, device):
    ids, expected = vanilla_logits
    model = load_with_method(tiny_model_dir, method, attn, **FACTOR_ONE[method]).to(device)
    with torch.no_grad():
        logits = model(ids.to(device)).logits.cpu()
    assert torch.allclose(logits, expected, atol=1e-5), (logits - expected).abs().max()


def test_small_windows_change_the_model(tiny_model_dir, vanilla_logits):
    ids, expected = vanilla_logits
    for method, args in [("self_extend", {"window": 8, "group": 4}), ("lm_infinite", {"local_window": 8})]:
        with torch.no_grad():
            logits = load_with_method(tiny_model_dir, method, **args)(ids).logits
        assert not torch.allclose(logits[:, -1], expected[:, -1], atol=1e-4), method


CACHED = [
    ("self_extend", {"window": 6, "group": 3}),
    ("lm_infinite", {"global_tokens": 2, "local_window": 7, "original_length": 10}),
    ("dynamic_ntk", {"s": 2.0}),
    ("yarn", {"factor": 2.0}),
]


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("method, args", CACHED, ids=[m for m, _ in CACHED])
def test_cached_generation_equals_full_recomputation(tiny_model_dir, method, args, attn, device):
    model = load_with_method(tiny_model_dir, method, attn, **args).to(device)
    prompt = token_ids(1, 30, seed=3).to(device)
    with torch.no_grad():
        out = model.generate(
            prompt, max_new_tokens=8, do_sample=False, output_logits=True, return_dict_in_generate=True
        )
        full = model(out.sequences).logits
    for step, step_logits in enumerate(out.logits):
        assert torch.allclose(step_logits, full[:, 29 + step], atol=1e-4), step


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("method, args", CACHED[:2], ids=[m for m, _ in CACHED[:2]])
def test_bfloat16_model_on_cuda_takes_the_band_path_and_matches_eager(tiny_model_dir, method, args):
    ids = token_ids(2, 60).cuda()
    logits = {}
    for attn in ("sdpa", "eager"):  # sdpa without padding: FlashAttention bands; eager: the blocked path
        model = load_with_method(tiny_model_dir, method, attn, **args).to("cuda", torch.bfloat16)
        with torch.no_grad():
            logits[attn] = model(ids).logits.double()
    relative = (logits["sdpa"] - logits["eager"]).norm() / logits["eager"].norm()
    assert relative < 2e-2, relative


def test_left_padded_batch_generation_equals_single_rows(tiny_model_dir):
    model = load_with_method(tiny_model_dir, "self_extend", window=5, group=2)
    long, short = token_ids(1, 26, seed=4), token_ids(1, 19, seed=5)
    batch = torch.full((2, 26), 3)
    batch[0], batch[1, 7:] = long[0], short[0]
    mask = (batch != 3).long()
    mask[0] = 1
    with torch.no_grad():
        together = model.generate(batch, attention_mask=mask, max_new_tokens=5, do_sample=False, pad_token_id=3)
        alone = model.generate(short, max_new_tokens=5, do_sample=False)
    assert together[1, 26:].tolist() == alone[0, 19:].tolist()


# --- lengths through the wrapper ------------------------------------------------------------


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"method": "yarn", "factor": 2}, 256),
        ({"method": "pi", "target_length": 300}, 300),
        ({"method": "self_extend", "window": 32, "group": 4}, (128 - 32) * 4 + 32),
        ({"method": "lm_infinite"}, 4 * 128),
        ({"method": "ntk", "factor": 2, "max_length": 200}, 200),
    ],
)
def test_max_length_is_raised(tiny_model_dir, args, expected):
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    lm = LongMemLM(pretrained=str(tiny_model_dir), device="cpu", **args)
    assert lm.max_length == expected


def test_checkpoint_records_its_method(tiny_model_dir, tmp_path):
    import shutil

    from transformers import AutoConfig, AutoTokenizer

    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM
    from lm_eval_longmem.models.checkpoint.method_record import record_method

    directory = tmp_path / "extended"
    shutil.copytree(tiny_model_dir, directory)
    config = AutoConfig.from_pretrained(directory)
    record_method(config, "ntk", {"factor": 2.0})
    config.save_pretrained(directory)
    AutoTokenizer.from_pretrained(tiny_model_dir)  # the copy keeps the tokenizer
    lm = LongMemLM(pretrained=str(directory), device="cpu")
    assert lm.longmem_method.name == "ntk" and lm.max_length == 256
    assert LongMemLM(pretrained=str(directory), device="cpu", factor=3).max_length == 384
    assert LongMemLM(pretrained=str(directory), device="cpu", method="vanilla").max_length == 128
    # Tasks size their inputs with the same method before they meet the model.
    from lm_eval_longmem.tasks.model_view import model_view

    assert model_view({"pretrained": str(directory)}).context_length == 256
    assert model_view({"pretrained": str(directory), "factor": 3}).context_length == 384
    assert model_view({"pretrained": str(directory), "method": "vanilla"}).context_length == 128


# --- other Llama-style families --------------------------------------------------------------


@pytest.fixture(scope="module", params=["mistral", "qwen2", "qwen3", "phi3"])
def family_model_dir(request, tmp_path_factory):
    from transformers import AutoModelForCausalLM, MistralConfig, Phi3Config, Qwen2Config, Qwen3Config

    config_cls = {"mistral": MistralConfig, "qwen2": Qwen2Config, "qwen3": Qwen3Config, "phi3": Phi3Config}[
        request.param
    ]
    # Phi-3: fused qkv_proj and partial rotary (half of each head rotates), as Phi-3.5/Phi-4-mini ship it
    extra = {"partial_rotary_factor": 0.5, "sliding_window": None, "pad_token_id": 0} if request.param == "phi3" else {}
    torch.manual_seed(0)
    config = config_cls(
        **extra,
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=128,
    )
    directory = tmp_path_factory.mktemp(request.param)
    AutoModelForCausalLM.from_config(config).save_pretrained(directory)
    return directory


@pytest.mark.parametrize("method", sorted(FACTOR_ONE))
def test_other_families_equal_vanilla_at_neutral_settings(family_model_dir, method):
    ids = token_ids(2, 60)
    with torch.no_grad():
        expected = load_with_method(family_model_dir, "vanilla")(ids).logits
        logits = load_with_method(family_model_dir, method, **FACTOR_ONE[method])(ids).logits
    assert torch.allclose(logits, expected, atol=1e-5), (logits - expected).abs().max()


@pytest.mark.parametrize("method, args", CACHED, ids=[m for m, _ in CACHED])
def test_other_families_cached_generation_equals_full_recomputation(family_model_dir, method, args):
    model = load_with_method(family_model_dir, method, **args)
    prompt = token_ids(1, 30, seed=3)
    with torch.no_grad():
        out = model.generate(
            prompt, max_new_tokens=6, do_sample=False, output_logits=True, return_dict_in_generate=True
        )
        full = model(out.sequences).logits
    for step, step_logits in enumerate(out.logits):
        assert torch.allclose(step_logits, full[:, 29 + step], atol=1e-4), step


def rotate_partial(x, pos, inv_freq):
    """RoPE on the first 2 * len(inv_freq) dims only (Phi-3's partial rotary), written out."""
    rot = 2 * inv_freq.shape[0]
    angle = pos.double()[..., None] * inv_freq.double()
    cos, sin = angle.cos(), angle.sin()
    x1, x2, rest = x[..., : rot // 2].double(), x[..., rot // 2 : rot].double(), x[..., rot:].double()
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest), dim=-1)


@pytest.mark.parametrize("backend", ["sdpa", "eager"])
@pytest.mark.parametrize("rule, distance_of", RULES, ids=RULE_IDS)
def test_part_attention_with_partial_rotary_matches_per_pair_reference(rule, distance_of, backend, monkeypatch):
    """Half of each head rotates (inv_freq has HEAD_DIM / 4 entries): the parts re-rotate only those dims."""
    monkeypatch.setattr(sys.modules[__name__], "rotate", rotate_partial)  # the reference rotates as Phi-3 does
    length, scaling = 23, HEAD_DIM**-0.5
    inv_freq = 1.0 / (100.0 ** (torch.arange(0, HEAD_DIM // 2, 2).float() / (HEAD_DIM // 2)))
    q_raw, k_raw, v = random_qkv(length, seed=4)
    pos = torch.arange(length)[None]
    q, k = rotate_partial(q_raw, pos, inv_freq).float(), rotate_partial(k_raw, pos, inv_freq).float()
    ours = part_attention(rule, q, k, v, None, scaling, pos, inv_freq, backend)
    expected = reference_attention(q_raw, k_raw, v, distance_of, scaling, inv_freq)
    assert torch.allclose(ours.double(), expected, atol=1e-5), (ours.double() - expected).abs().max()
