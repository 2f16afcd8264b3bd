"""The compiled grouped-softmax kernels on a CUDA GPU against the reference (skipped without CUDA).

The interpreter tests (test_grouped_softmax_triton.py) check the kernels' logic at tiny sizes;
these check what only a GPU shows: compilation, half-precision loads, and rows long enough for
many blocks and a masked tail (`scripts/gpu-check.sh --only cuda-tests` selects them by name).
"""

from __future__ import annotations

import pytest
import torch

from lm_eval_longmem.kernels.forgetting_attention.dispatch import triton_interpreter_enabled
from lm_eval_longmem.kernels.grouped_softmax import grouped_softmax, reference_grouped_softmax

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(triton_interpreter_enabled(), reason="TRITON_INTERPRET=1: these tests are for compiled kernels"),
]

# (block size, queries, keys, dtype, tolerance): the study's blocks of 64, the released weights' 51,
# a window's worth of queries against a long store, and one decoded query
CASES = [
    (64, 128, 2048, torch.float32, 1e-5),
    (51, 77, 1531, torch.float32, 1e-5),
    (64, 128, 4096, torch.bfloat16, 2e-2),
    (64, 1, 4097, torch.float16, 2e-3),
]


@pytest.mark.parametrize("block_size, num_queries, num_keys, dtype, tol", CASES)
def test_compiled_kernels_match_the_reference(block_size, num_queries, num_keys, dtype, tol):
    generator = torch.Generator(device="cuda").manual_seed(3)
    s = (torch.randn(2, 4, num_queries, num_keys, device="cuda", generator=generator) * 3).to(dtype)
    s.requires_grad_()
    probe = torch.randn(2, 4, num_queries, num_keys, device="cuda", generator=generator)
    got = grouped_softmax(s, block_size, backend="triton")
    s64 = s.detach().double().requires_grad_()
    want = reference_grouped_softmax(s64, block_size)
    assert got.dtype == dtype
    torch.testing.assert_close(got.double(), want, rtol=0, atol=tol)
    assert (got[..., block_size - 1 :: block_size] == 0).all()  # landmark columns: weight exactly 0
    (got_grad,) = torch.autograd.grad((got.float() * probe).sum(), s)
    (want_grad,) = torch.autograd.grad((want * probe.double()).sum(), s64)
    torch.testing.assert_close(got_grad.double(), want_grad, rtol=0, atol=tol * 10)
