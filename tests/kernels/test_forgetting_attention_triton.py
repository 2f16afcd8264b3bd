"""Triton kernels against the reference on CPU, through the Triton interpreter.

triton 3.x decides interpreter mode in ``triton.jit``, i.e. when a kernel module (triton's own
``tl`` library included) is imported, so ``TRITON_INTERPRET=1`` is set before this module first
imports triton and our kernels. If triton was already imported without it (another test module
got there first), one test re-runs this file in a fresh process instead. bf16 is left out:
``tl.dot`` on bf16 is wrong in the interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from lm_eval_longmem.kernels.forgetting_attention import biased_attention, cumulative_log_fgate, forgetting_attention
from tests.helpers.forgetting_attention_cases import (
    Case,
    assert_all_close,
    float64_biased_attention,
    make_inputs,
    output_and_grads,
    strongly_forgetting_inputs,
)


def _import_kernels_interpreted() -> bool:
    """Import triton and our kernels in interpreter mode; False if triton came in without it.

    The variable stays set for the rest of the process: triton modules imported later (fla's
    gluon backends) assert that they agree with the mode triton's own library was built in."""
    if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        return False  # a GPU process compiles the kernels (test_forgetting_attention_cuda.py)
    if "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"
    pytest.importorskip("triton")
    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction

    if not isinstance(tl.zeros, InterpretedFunction):
        return False
    from lm_eval_longmem.kernels.forgetting_attention import block_configs, parallel  # noqa: F401

    return block_configs.INTERPRETED


INTERPRETED = _import_kernels_interpreted()
needs_interpreter = pytest.mark.skipif(
    not INTERPRETED, reason="triton was imported before TRITON_INTERPRET=1; see the fresh-process test"
)

GRAD_NAMES = ["out", "dq", "dk", "dv", "dbias"]

CASES = [
    Case("plain", length=40),
    Case("gqa_d32", batch=2, length=37, q_heads=4, kv_heads=2, head_dim=32),
    Case("mqa_padding_with_empty_row", batch=3, length=33, q_heads=4, kv_heads=1, seq_start=(0, 9, 33)),
    Case("varlen", length=45, cu_seqlens=(0, 5, 6, 30, 45)),
    Case("decode_one", batch=2, length=30, q_heads=4, kv_heads=2, num_queries=1),
    Case("decode_chunk_padded", batch=2, length=41, num_queries=13, seq_start=(2, 35)),
]


@pytest.mark.skipif(INTERPRETED, reason="the kernels run in this process")
def test_kernels_in_a_fresh_interpreter_process():
    env = dict(os.environ, TRITON_INTERPRET="1")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", __file__],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def _compare_biased(case: Case, dtype: torch.dtype, atol: float) -> None:
    inputs = make_inputs(case, dtype=dtype)
    wrt = [inputs[n] for n in ("q", "k", "v", "k_bias")]
    results = [
        output_and_grads(
            biased_attention(*wrt[:3], inputs["q_bias"], inputs["k_bias"], backend=b, **case.extras()), wrt
        )
        for b in ("triton", "reference")
    ]
    assert_all_close(results[0], results[1], GRAD_NAMES, atol=atol, rtol=1e-2 if dtype == torch.float16 else 1e-3)


@needs_interpreter
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_triton_matches_reference_fp32(case):
    _compare_biased(case, torch.float32, atol=5e-5)


@needs_interpreter
@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[2]], ids=lambda c: c.name)
def test_triton_matches_reference_fp16(case):
    _compare_biased(case, torch.float16, atol=2e-2)


@needs_interpreter
def test_triton_head_dim_64():
    _compare_biased(Case("d64", length=24, q_heads=2, kv_heads=1, head_dim=64), torch.float32, atol=5e-5)


@needs_interpreter
@pytest.mark.parametrize("case", [CASES[1], CASES[3]], ids=lambda c: c.name)
def test_triton_forget_gate_gradient(case):
    inputs = make_inputs(case)
    wrt = [inputs[n] for n in ("q", "k", "v", "log_fgate")]
    results = [
        output_and_grads(forgetting_attention(*wrt, backend=b, **case.extras()), wrt) for b in ("triton", "reference")
    ]
    assert_all_close(results[0], results[1], GRAD_NAMES, atol=5e-5)


@needs_interpreter
def test_triton_decode_steps_equal_full_rows():
    inputs = make_inputs(Case("gqa", batch=2, length=29, q_heads=4, kv_heads=2))
    q, k, v, log_f = (inputs[n].detach() for n in ("q", "k", "v", "log_fgate"))
    full = forgetting_attention(q, k, v, log_f, backend="triton")
    c = cumulative_log_fgate(log_f)
    for start, stop in [(0, 17), (17, 18), (18, 29)]:
        step = biased_attention(
            q[:, start:stop], k[:, :stop], v[:, :stop], c[:, start:stop], c[:, :stop], backend="triton"
        )
        torch.testing.assert_close(step, full[:, start:stop], atol=1e-5, rtol=1e-5)


@needs_interpreter
def test_triton_fp32_precision_at_long_strongly_forgetting_inputs():
    """|c| reaches about 1100 at 512 tokens: adding q_bias and k_bias to the scores one after the
    other rounded at that magnitude (relative error ~1e-4 here); their difference first does not."""
    q, k, v, c = strongly_forgetting_inputs(length=512, heads=1, head_dim=16)
    want = float64_biased_attention(q, k, v, c, c)
    for backend in ("triton", "blocked"):
        out = biased_attention(q, k, v, c, c, backend=backend)
        error = ((out.double() - want).norm() / want.norm()).item()
        assert error < 2e-6, f"{backend}: relative error {error:.2e} against float64"


SPLIT_CASES = [
    Case("decode_one_gqa", batch=2, length=700, q_heads=4, kv_heads=2, num_queries=1),
    # batch 1's rows see keys from 695 on: no key in the first splits, none at all for rows before 695
    Case("decode_chunk_padded_with_empty_rows", batch=2, length=700, num_queries=13, seq_start=(2, 695)),
]


@needs_interpreter
@pytest.mark.parametrize("splits", [2, 3], ids=lambda s: f"{s}_splits")
@pytest.mark.parametrize("case", SPLIT_CASES, ids=lambda c: c.name)
def test_triton_split_key_decoding_equals_the_reference(case, splits, monkeypatch):
    """Keys split across programs (flash-decoding, inference only) and merged by log-sum-exp."""
    from lm_eval_longmem.kernels.forgetting_attention import parallel

    monkeypatch.setattr(parallel, "key_splits", lambda *args: splits)
    inputs = {name: t.detach() for name, t in make_inputs(case).items()}
    args = [inputs[n] for n in ("q", "k", "v", "q_bias", "k_bias")]
    with torch.no_grad():
        got = biased_attention(*args, backend="triton", **case.extras())
        want = biased_attention(*args, backend="reference", **case.extras())
    torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-5)


@needs_interpreter
@pytest.mark.parametrize("splits", [2, 3, 5])
def test_merge_kernel_equals_the_pytorch_merge(splits):
    """The one-launch merge against the readable one, with splits that saw no key (lse +inf) and
    a row no split saw (output 0, lse +inf)."""
    from lm_eval_longmem.kernels.forgetting_attention.decoding import merge_split_outputs, merge_split_outputs_triton

    gen = torch.Generator().manual_seed(splits)
    batch, queries, heads, head_dim = 2, 3, 4, 16
    partial_out = torch.randn(splits, batch, queries, heads, head_dim, generator=gen)
    partial_lse = torch.randn(splits, batch * heads, queries, generator=gen) * 4
    partial_lse[0, 1, 0] = float("inf")  # split 0 saw no key for this row
    partial_lse[:, 5, 2] = float("inf")  # no split saw a key: batch 1, head 1, query 2
    partial_out[:, 1, 2, 1] = 0.0  # as the forward kernel writes such rows
    want_out, want_lse = merge_split_outputs(partial_out, partial_lse, heads)
    got_out, got_lse = merge_split_outputs_triton(partial_out, partial_lse, heads, torch.float32)
    torch.testing.assert_close(got_out, want_out, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(got_lse, want_lse, atol=1e-6, rtol=1e-6)
    assert got_lse[5, 2] == float("inf") and not got_out[1, 2, 1].any()


def test_split_keys_only_for_a_few_queries_without_gradients():
    from lm_eval_longmem.kernels.forgetting_attention.decoding import key_splits, split_length

    cpu = torch.device("cpu")
    assert key_splits(1, 65536, 2, cpu, needs_grad=False) > 1
    assert key_splits(1, 65536, 2, cpu, needs_grad=True) == 1  # training: one lse per row for the backward
    assert key_splits(4096, 65536, 16, cpu, needs_grad=False) == 1  # prefill has query blocks to spread
    assert key_splits(1, 600, 16, cpu, needs_grad=False) == 1  # too few keys to be worth it
    assert split_length(700, 3) == 256 and split_length(65536, 8) == 8192
