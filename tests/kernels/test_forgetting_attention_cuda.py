"""The compiled Triton kernels on a CUDA GPU against the reference (skipped without CUDA).

The interpreter tests (test_forgetting_attention_triton.py) check the kernels' logic at tiny
sizes; these check what only a GPU shows: compilation, bf16 tensor-core dots, block sizes that
the autotuner picks, and lengths where several key blocks and masked tails interact.
"""

from __future__ import annotations

import pytest
import torch

from lm_eval_longmem.kernels.forgetting_attention import biased_attention, cumulative_log_fgate, forgetting_attention
from lm_eval_longmem.kernels.forgetting_attention.dispatch import triton_interpreter_enabled
from tests.helpers.forgetting_attention_cases import (
    BF16_TOLERANCE,
    LONG_FORGET_GATE_CASE,
    Case,
    assert_all_close,
    float64_biased_attention,
    make_inputs,
    output_and_grads,
    strongly_forgetting_inputs,
)

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(triton_interpreter_enabled(), reason="TRITON_INTERPRET=1: these tests are for compiled kernels"),
]

GRAD_NAMES = ["out", "dq", "dk", "dv", "dbias"]
CASES = [
    Case("d128", length=1000, q_heads=4, kv_heads=4, head_dim=128),
    Case("gqa_d64", batch=2, length=777, q_heads=8, kv_heads=2, head_dim=64),
    Case("padding_d64", batch=3, length=300, q_heads=4, kv_heads=1, head_dim=64, seq_start=(0, 71, 300)),
    Case("varlen_d32", length=645, q_heads=2, kv_heads=2, head_dim=32, cu_seqlens=(0, 5, 6, 330, 645)),
    Case("decode_one_d128", batch=2, length=2049, q_heads=4, kv_heads=2, head_dim=128, num_queries=1),
    Case(
        "decode_chunk_d64", batch=2, length=513, q_heads=4, kv_heads=2, head_dim=64, num_queries=77, seq_start=(2, 400)
    ),
]
# Max abs error allowed against the fp32 reference, per input dtype (outputs and gradients are O(1)).
TOLERANCE = {torch.float32: (2e-4, 1e-3), torch.float16: (2e-2, 2e-2), torch.bfloat16: BF16_TOLERANCE}


def _on_cuda(inputs: dict) -> dict:
    return {name: t.detach().cuda().requires_grad_() for name, t in inputs.items()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_compiled_kernel_matches_reference(case, dtype):
    inputs = _on_cuda(make_inputs(case, dtype=dtype))
    wrt = [inputs[n] for n in ("q", "k", "v", "k_bias")]
    extras = {name: (None if t is None else t.cuda()) for name, t in case.extras().items()}
    results = [
        output_and_grads(biased_attention(*wrt[:3], inputs["q_bias"], inputs["k_bias"], backend=b, **extras), wrt)
        for b in ("triton", "reference")
    ]
    atol, rtol = TOLERANCE[dtype]
    assert_all_close(results[0], results[1], GRAD_NAMES, atol=atol, rtol=rtol)


def test_compiled_forget_gate_gradient_bf16():
    inputs = _on_cuda(make_inputs(LONG_FORGET_GATE_CASE, dtype=torch.bfloat16))
    wrt = [inputs[n] for n in ("q", "k", "v", "log_fgate")]
    results = [output_and_grads(forgetting_attention(*wrt, backend=b), wrt) for b in ("triton", "reference")]
    atol, rtol = BF16_TOLERANCE
    assert_all_close(results[0], results[1], GRAD_NAMES, atol=atol, rtol=rtol)


def test_fp32_precision_at_long_strongly_forgetting_inputs(record_property):
    """c = cumsum(log f) reaches about -9000 at 4096 tokens here; the fp32 kernel must still give the
    float64 answer for the same inputs to fp32 rounding (IEEE dots, biases subtracted first)."""
    q, k, v, c = (t.cuda() for t in strongly_forgetting_inputs(length=4096, heads=2, head_dim=64))
    out = biased_attention(q, k, v, c, c, backend="triton")
    want = float64_biased_attention(q, k, v, c, c)
    error = ((out.double() - want).norm() / want.norm()).item()
    print(f"fp32 compiled kernel vs float64, T=4096, strong forgetting: relative error {error:.2e}")
    record_property("fp32_relative_error_vs_float64", f"{error:.2e}")  # into the JUnit XML and the GPU report
    assert error < 2e-6


def test_compiled_decode_steps_equal_full_rows():
    inputs = make_inputs(Case("gqa", batch=2, length=600, q_heads=4, kv_heads=2, head_dim=64))
    q, k, v, log_f = (inputs[n].detach().cuda() for n in ("q", "k", "v", "log_fgate"))
    full = forgetting_attention(q, k, v, log_f, backend="triton")
    c = cumulative_log_fgate(log_f)
    for start, stop in [(0, 300), (300, 301), (301, 600)]:
        step = biased_attention(
            q[:, start:stop], k[:, :stop], v[:, :stop], c[:, start:stop], c[:, :stop], backend="triton"
        )
        torch.testing.assert_close(step, full[:, start:stop], atol=1e-4, rtol=1e-4)


def test_fox_bf16_logits_through_the_compiled_kernel(tmp_path, monkeypatch, record_property):
    """A small random FoX model: bf16 on the GPU (compiled kernel) against fp32 on the reference path."""
    from transformers import AutoModelForCausalLM

    from lm_eval_longmem.models.fox import ForgettingTransformerConfig

    torch.manual_seed(0)
    config = ForgettingTransformerConfig(
        vocab_size=512,
        hidden_size=256,
        num_hidden_layers=2,
        num_heads=2,
        max_position_embeddings=None,
        eos_token_id=None,
    )
    model = AutoModelForCausalLM.from_config(config).eval()
    ids = torch.randint(0, 512, (2, 1500))
    import lm_eval_longmem.models.fox.attention as fox_attention

    model = model.float().cuda()
    with torch.no_grad():
        compiled_fp32 = model(ids.cuda()).logits.float()
        monkeypatch.setattr(
            fox_attention, "biased_attention", _with_backend(fox_attention.biased_attention, "reference")
        )
        reference = model(ids.cuda()).logits.float()
        monkeypatch.undo()
        compiled_bf16 = model.to(torch.bfloat16)(ids.cuda()).logits.float()
    fp32_error = ((compiled_fp32 - reference).norm() / reference.norm()).item()
    bf16_error = ((compiled_bf16 - reference).norm() / reference.norm()).item()
    print(f"FoX logits vs fp32 reference path: compiled fp32 {fp32_error:.2e}, compiled bf16 {bf16_error:.2e}")
    record_property("compiled_fp32_logits_relative_error", f"{fp32_error:.2e}")
    record_property("compiled_bf16_logits_relative_error", f"{bf16_error:.2e}")
    assert fp32_error < 1e-4
    assert bf16_error < 3e-2


def _with_backend(function, backend):
    def call(*args, **kwargs):
        return function(*args, **{**kwargs, "backend": backend})

    return call


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_compiled_split_key_decoding_equals_the_reference(dtype):
    """One query and a 16-query chunk against 8k keys without gradients: the keys are split across
    programs (flash-decoding) and merged; the result is the reference's."""
    from lm_eval_longmem.kernels.forgetting_attention.decoding import key_splits

    for num_queries in (1, 16):
        case = Case("decode_split", batch=2, length=8192, q_heads=8, kv_heads=2, head_dim=128, num_queries=num_queries)
        inputs = {name: t.detach().cuda() for name, t in make_inputs(case, dtype=dtype).items()}
        assert key_splits(num_queries, 8192, 16, inputs["q"].device, needs_grad=False) > 1
        args = [inputs[n] for n in ("q", "k", "v", "q_bias", "k_bias")]
        with torch.no_grad():
            got = biased_attention(*args, backend="triton").float()
            want = biased_attention(*args, backend="reference").float()
        atol, rtol = TOLERANCE[dtype]
        torch.testing.assert_close(got, want, atol=atol, rtol=rtol)
