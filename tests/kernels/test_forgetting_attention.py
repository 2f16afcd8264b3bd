"""Forgetting attention: the reference against hand-computed numbers and independent oracles, and
the blocked CPU path against the reference (forward and gradients) in every masking mode."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import pytest
import torch

from lm_eval_longmem.kernels.forgetting_attention import (
    biased_attention,
    blocked,
    choose_backend,
    cumulative_log_fgate,
    dispatch,
    forgetting_attention,
    triton_unsupported_reason,
)
from lm_eval_longmem.kernels.forgetting_attention import blocked as blocked_module
from tests.helpers.forgetting_attention_cases import (
    BF16_TOLERANCE,
    LONG_FORGET_GATE_CASE,
    Case,
    assert_all_close,
    make_inputs,
    output_and_grads,
)

GRAD_NAMES = ["out", "dq", "dk", "dv", "dbias"]

CASES = [
    Case("plain"),
    Case("gqa", batch=2, length=37, q_heads=4, kv_heads=2, head_dim=32),
    Case("mqa_padding", batch=3, length=33, q_heads=4, kv_heads=1, seq_start=(0, 9, 33)),
    Case("varlen", length=45, cu_seqlens=(0, 5, 6, 30, 45)),
    Case("decode_one", batch=2, length=30, q_heads=4, kv_heads=2, num_queries=1),
    Case("decode_chunk_padded", batch=2, length=41, num_queries=13, seq_start=(2, 35)),
]


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """Several query blocks even at test sizes, with blocks straddling masks and sequences."""
    monkeypatch.setattr(blocked, "DEFAULT_QUERY_BLOCK", 8)


def test_hand_computed_three_tokens():
    # D = 1, scale 1, q = 1, k = (0, ln 2, 0) -> exp(q.k) = (1, 2, 1); f = (-, 1/2, 1/2), so
    # F_ij = prod_{l=j+1..i} f_l: row 1 -> (1/2, 1), row 2 -> (1/4, 1/2, 1); v = (1, 4, 8).
    # o_0 = 1; o_1 = (1/2 * 1 * 1 + 1 * 2 * 4) / (1/2 + 2) = 3.4; o_2 = (1/4 + 1/2*2*4 + 8) / (1/4 + 1 + 1) = 49/9.
    q = torch.ones(1, 3, 1, 1)
    k = torch.tensor([0.0, math.log(2.0), 0.0]).reshape(1, 3, 1, 1)
    v = torch.tensor([1.0, 4.0, 8.0]).reshape(1, 3, 1, 1)
    log_f = torch.log(torch.tensor([0.3, 0.5, 0.5])).reshape(1, 3, 1)
    want = torch.tensor([1.0, 3.4, 49.0 / 9.0])
    for backend in ("reference", "blocked"):
        out = forgetting_attention(q, k, v, log_f, scale=1.0, backend=backend)
        torch.testing.assert_close(out.flatten(), want)


def test_reference_matches_fla_naive():
    naive = pytest.importorskip("fla.ops.forgetting_attn.naive")
    inputs = make_inputs(Case("gqa", batch=2, length=24, q_heads=4, kv_heads=2, head_dim=16))
    q, k, v, g = (inputs[n].detach() for n in ("q", "k", "v", "log_fgate"))
    # fla's g is the per-step log forget gate (it takes the cumsum itself), [B, T, HQ] like ours.
    want = naive.naive_forgetting_attn(q, k, v, g)
    got = forgetting_attention(q, k, v, g, backend="reference")
    torch.testing.assert_close(got, want.to(got.dtype), atol=1e-5, rtol=1e-5)


def _explicit_softmax(q, k, v, logit_bias, scale):
    """softmax(q.k * scale + logit_bias) v over one head; logit_bias holds -inf where masked."""
    scores = q[0, :, 0] @ k[0, :, 0].T * scale + logit_bias
    return (torch.softmax(scores, -1) @ v[0, :, 0])[None, :, None]


@pytest.mark.parametrize("backend", ["reference", "blocked"])
def test_alibi_is_a_biased_attention(backend):
    inputs = make_inputs(Case("one_head", length=20, q_heads=1, kv_heads=1))
    q, k, v = (inputs[n].detach() for n in ("q", "k", "v"))
    slope = 0.25
    positions = torch.arange(20.0)
    distance = positions[:, None] - positions[None, :]
    alibi = (-slope * distance).masked_fill(distance < 0, float("-inf"))
    want = _explicit_softmax(q, k, v, alibi, 0.25)
    bias = (-slope * positions).reshape(1, 20, 1)
    got = biased_attention(q, k, v, bias, bias, backend=backend)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backend", ["reference", "blocked"])
def test_merge_counts_are_a_key_bias(backend):
    # Stated-CLM: a query at the end of a merged cache attends with softmax(q.k + log cnt_j).
    inputs = make_inputs(Case("cache", length=12, q_heads=1, kv_heads=1, num_queries=3))
    q, k, v = (inputs[n].detach() for n in ("q", "k", "v"))
    counts = torch.tensor([4.0, 2, 2, 1, 1, 3, 1, 1, 1, 1, 1, 1])
    causal = torch.ones(3, 12).tril(diagonal=9).bool()
    bias = torch.log(counts)[None, :].expand(3, 12).masked_fill(~causal, float("-inf"))
    want = _explicit_softmax(q, k, v, bias, 0.25)
    got = biased_attention(q, k, v, torch.zeros(1, 3, 1), -torch.log(counts).reshape(1, 12, 1), backend=backend)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backend", ["reference", "blocked"])
def test_unit_forget_gates_are_plain_causal_attention(backend):
    inputs = make_inputs(Case("gqa", batch=2, length=30, q_heads=4, kv_heads=2))
    q, k, v = (inputs[n].detach() for n in ("q", "k", "v"))
    got = forgetting_attention(q, k, v, torch.zeros(2, 30, 4), backend=backend)
    want = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True
    ).transpose(1, 2)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_blocked_biased_attention_matches_reference(case):
    inputs = make_inputs(case)
    wrt = [inputs[n] for n in ("q", "k", "v", "k_bias")]
    results = [
        output_and_grads(
            biased_attention(*wrt[:3], inputs["q_bias"], inputs["k_bias"], backend=b, **case.extras()), wrt
        )
        for b in ("blocked", "reference")
    ]
    assert_all_close(results[0], results[1], GRAD_NAMES, atol=2e-5)


@pytest.mark.parametrize("case", [c for c in CASES if c.num_queries is None], ids=lambda c: c.name)
def test_blocked_forgetting_attention_matches_reference(case):
    inputs = make_inputs(case)
    wrt = [inputs[n] for n in ("q", "k", "v", "log_fgate")]
    results = [
        output_and_grads(forgetting_attention(*wrt, backend=b, **case.extras()), wrt) for b in ("blocked", "reference")
    ]
    assert_all_close(results[0], results[1], GRAD_NAMES, atol=2e-5)


def test_bf16_forget_gate_gradient_takes_delta_from_an_fp32_output():
    """delta = dO . O from the bf16 output put max |d log f| 0.17 off at T = 700 (the rounding adds
    up in the gate's reverse cumulative sum; the first CUDA run failed the same check on the
    compiled kernel); from the fp32 output it is 0.015, the rounding of dO itself."""
    inputs = make_inputs(LONG_FORGET_GATE_CASE, dtype=torch.bfloat16)
    wrt = [inputs[n] for n in ("q", "k", "v", "log_fgate")]
    results = [output_and_grads(forgetting_attention(*wrt, backend=b), wrt) for b in ("blocked", "reference")]
    atol, rtol = BF16_TOLERANCE
    assert_all_close(results[0], results[1], GRAD_NAMES, atol=atol, rtol=rtol)


def test_query_bias_gradient_is_the_row_sum_of_ds_which_is_zero_up_to_rounding():
    """d q_bias_i = sum_j dS_ij vanishes in exact arithmetic (a row shift leaves a softmax alone);
    the kernels compute it anyway, so it must be zero to fp32 rounding, not some other value."""
    inputs = make_inputs(CASES[1])
    out = biased_attention(*(inputs[n] for n in ("q", "k", "v", "q_bias", "k_bias")), backend="blocked")
    (grad,) = torch.autograd.grad(out.sum(), [inputs["q_bias"]])
    assert grad.abs().max() < 1e-5


def test_bf16_gate_gradient_survives_a_rounded_delta(monkeypatch):
    """The compiled kernel multiplies bf16-rounded probabilities by V, so its output, and delta =
    dO . O, carry bf16 rounding even when the output is kept in fp32; on an H200 that put
    max |d log f| 0.13 off at T = 700. The query-bias gradient (the row sums of dS) carries the
    same rounding with the other sign, and for FoX (q_bias = k_bias = c) it cancels the key-bias
    gradient's. Emulated here by taking delta from the bf16 output: 0.027 with the row sums,
    0.18 without."""
    monkeypatch.setattr(blocked_module, "keeps_fp32_output", lambda dtype, bias_needs_grad: False)
    inputs = make_inputs(LONG_FORGET_GATE_CASE, dtype=torch.bfloat16)
    wrt = [inputs[n] for n in ("q", "k", "v", "log_fgate")]
    results = [output_and_grads(forgetting_attention(*wrt, backend=b), wrt) for b in ("blocked", "reference")]
    atol, rtol = BF16_TOLERANCE
    assert_all_close(results[0], results[1], GRAD_NAMES, atol=atol, rtol=rtol)


@pytest.mark.parametrize("backend", ["reference", "blocked"])
def test_decode_and_chunked_prefill_equal_full_rows(backend):
    inputs = make_inputs(Case("gqa", batch=2, length=29, q_heads=4, kv_heads=2))
    q, k, v, log_f = (inputs[n].detach() for n in ("q", "k", "v", "log_fgate"))
    full = forgetting_attention(q, k, v, log_f, backend=backend)
    c = cumulative_log_fgate(log_f)
    for start, stop in [(0, 11), (11, 12), (12, 28), (28, 29)]:
        step = biased_attention(
            q[:, start:stop], k[:, :stop], v[:, :stop], c[:, start:stop], c[:, :stop], backend=backend
        )
        torch.testing.assert_close(step, full[:, start:stop], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backend", ["reference", "blocked"])
def test_left_padding_equals_unpadded_rows(backend):
    inputs = make_inputs(Case("padded", batch=2, length=25))
    q, k, v, log_f = (inputs[n].detach() for n in ("q", "k", "v", "log_fgate"))
    log_f = log_f.clone()
    log_f[1, :7] = float("-inf")  # garbage gates under the padding must not matter
    out = forgetting_attention(q, k, v, log_f, seq_start=torch.tensor([0, 7]), backend=backend)
    alone = forgetting_attention(q[1:, 7:], k[1:, 7:], v[1:, 7:], log_f[1:, 7:], backend=backend)
    torch.testing.assert_close(out[1:, 7:], alone, atol=1e-5, rtol=1e-5)
    assert torch.count_nonzero(out[1, :7]) == 0


@pytest.mark.parametrize("backend", ["reference", "blocked"])
def test_packed_sequences_do_not_see_each_other(backend):
    inputs = make_inputs(Case("varlen", length=30))
    q, k, v, log_f = (inputs[n].detach() for n in ("q", "k", "v", "log_fgate"))
    bounds = [0, 4, 17, 30]
    packed = forgetting_attention(q, k, v, log_f, cu_seqlens=torch.tensor(bounds), backend=backend)
    for a, b in zip(bounds[:-1], bounds[1:]):
        alone = forgetting_attention(q[:, a:b], k[:, a:b], v[:, a:b], log_f[:, a:b], backend=backend)
        torch.testing.assert_close(packed[:, a:b], alone, atol=1e-5, rtol=1e-5)


def test_cumulative_gates_restart_per_sequence_and_skip_padding():
    log_f = torch.full((1, 6, 1), -1.0)
    c = cumulative_log_fgate(log_f, cu_seqlens=torch.tensor([0, 2, 6]))
    assert c.flatten().tolist() == [-1, -2, -1, -2, -3, -4]
    c = cumulative_log_fgate(log_f, seq_start=torch.tensor([3]))
    assert c.flatten().tolist() == [0, 0, 0, -1, -2, -3]
    assert cumulative_log_fgate(log_f.half()).dtype == torch.float32


def test_half_precision_inputs_on_blocked_path():
    inputs = make_inputs(CASES[1], dtype=torch.bfloat16)
    args = [inputs[n] for n in ("q", "k", "v", "log_fgate")]
    got = forgetting_attention(*args, backend="blocked")
    want = forgetting_attention(*args, backend="reference")
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want.float(), atol=2e-2, rtol=2e-2)


def test_auto_picks_blocked_on_cpu():
    q = torch.zeros(1, 4, 2, 16)
    assert choose_backend("auto", q, q, q) == "blocked"
    assert choose_backend("reference", q, q, q) == "reference"
    with pytest.raises(ValueError):
        choose_backend("flash", q, q, q)


def test_triton_shape_predicate():
    ok = torch.zeros(1, 4, 2, 64, dtype=torch.bfloat16)
    assert triton_unsupported_reason(ok, ok, ok) is None
    odd = torch.zeros(1, 4, 2, 80)
    assert "head dim 80" in triton_unsupported_reason(odd, odd, odd)
    wide = torch.zeros(1, 4, 2, 64, dtype=torch.float64)
    assert "dtypes" in triton_unsupported_reason(wide, wide, wide)


def test_triton_request_on_cpu_needs_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    q = torch.zeros(1, 4, 2, 16)
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET"):
        choose_backend("triton", q, q, q)


def test_unsupported_triton_shape_falls_back_with_one_warning(monkeypatch):
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(dispatch, "_warned_reasons", set())
    q = torch.zeros(1, 4, 2, 24)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert choose_backend("triton", q, q, q) == "blocked"
        out = biased_attention(q, q, q, torch.zeros(1, 4, 2), torch.zeros(1, 4, 2), backend="triton")
    assert out.shape == q.shape
    assert len([w for w in caught if "head dim 24" in str(w.message)]) == 1


def test_bad_shapes_are_rejected():
    q = torch.zeros(1, 5, 3, 16)
    k = torch.zeros(1, 5, 2, 16)
    with pytest.raises(ValueError, match="multiple"):
        biased_attention(q, k, k, torch.zeros(1, 5, 3), torch.zeros(1, 5, 3))
    q = torch.zeros(1, 6, 2, 16)
    with pytest.raises(ValueError, match="Tq"):
        biased_attention(q, k, k, torch.zeros(1, 6, 2), torch.zeros(1, 5, 2))


def test_importing_the_api_does_not_import_triton():
    code = "import sys, lm_eval_longmem.kernels.forgetting_attention as m; print('triton' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
