"""The grouped-softmax and retrieval-attention Triton kernels against the reference and the
PyTorch path on CPU, through the Triton interpreter (see test_forgetting_attention_triton.py for
why a fresh process may be needed)."""

from __future__ import annotations

import pytest
import torch

from lm_eval_longmem.kernels.grouped_softmax import (
    choose_backend,
    grouped_softmax,
    reference_grouped_softmax,
    retrieval_attention,
)
from tests.helpers.retrieval_attention_cases import random_case, written_out
from tests.helpers.triton_interpreter import interpreted, run_interpreted_in_a_fresh_process

INTERPRETED = interpreted()
needs_interpreter = pytest.mark.skipif(not INTERPRETED, reason="triton was imported before TRITON_INTERPRET=1")

CASES = [
    (4, 13, 13, torch.float32),
    (3, 5, 17, torch.float16),
    (51, 3, 180, torch.float32),  # the released weights' block size, not a power of two
    (64, 24, 200, torch.float32),
    (2, 7, 7, torch.float16),
]


@needs_interpreter
@pytest.mark.parametrize("block_size, num_queries, num_keys, dtype", CASES)
def test_kernels_match_the_reference(block_size, num_queries, num_keys, dtype):
    torch.manual_seed(1)
    s = (torch.randn(2, 2, num_queries, num_keys) * 2).to(dtype).requires_grad_()
    probe = torch.randn(2, 2, num_queries, num_keys)
    got = grouped_softmax(s, block_size, backend="triton")
    want = reference_grouped_softmax(s.double(), block_size)
    tol = 1e-6 if dtype == torch.float32 else 2e-3
    assert got.dtype == dtype
    assert torch.allclose(got.double(), want, atol=tol)
    assert (got[..., block_size - 1 :: block_size] == 0).all()
    assert torch.allclose(got.double().sum(-1), torch.ones(2, 2, num_queries, dtype=torch.float64), atol=tol * 10)
    (got_grad,) = torch.autograd.grad((got.float() * probe).sum(), s)
    s64 = s.detach().double().requires_grad_()
    (want_grad,) = torch.autograd.grad((reference_grouped_softmax(s64, block_size) * probe.double()).sum(), s64)
    assert torch.allclose(got_grad.double(), want_grad, atol=tol * 10)


@pytest.mark.skipif(INTERPRETED or torch.cuda.is_available(), reason="the tests above ran in this process")
def test_in_a_fresh_interpreted_process():
    run_interpreted_in_a_fresh_process(__file__)


@needs_interpreter
def test_rows_that_would_spill_are_not_sent_to_the_kernels():
    """3,265 keys: a 64x64 tile in blocks of 64, within the kernels' reach; in blocks of 51 (no vector
    loads) a 128x64 tile, past the 4,096 cells such rows compile without spills."""
    scores = torch.zeros(1, 3265)
    assert choose_backend("triton", scores, 64) == "triton"
    with pytest.raises(RuntimeError, match="blocks of 51 is longer than one tile"):
        choose_backend("triton", scores, 51)


@needs_interpreter
@pytest.mark.parametrize(
    "shape, softcap, dtype",
    [
        (dict(), None, torch.float32),
        (dict(block=3, window=9, dim=6), 2.0, torch.float32),  # a block and a head size that are not powers of two
        (dict(heads=2, kv_heads=2, k=3), None, torch.float16),
    ],
)
def test_retrieval_kernel_matches_the_pytorch_path(shape, softcap, dtype):
    case = random_case(dtype=dtype, **shape)
    got = retrieval_attention(**case, softcap=softcap, backend="triton")
    want = retrieval_attention(**case, softcap=softcap, backend="torch")
    assert got.dtype == dtype
    assert torch.allclose(got.double(), written_out(case, softcap), atol=1e-5 if dtype == torch.float32 else 2e-2)
    assert torch.allclose(got.float(), want.float(), atol=1e-5 if dtype == torch.float32 else 2e-2)


@needs_interpreter
def test_retrieval_kernel_without_slots_is_window_attention():
    case = random_case(k=2)
    case.update(
        slot_queries=case["slot_queries"][:, :, :0],
        chosen=case["chosen"][:, :, :0],
        slot_valid=case["slot_valid"][:, :, :0],
    )
    case.update(store_keys=case["store_keys"][:, :0], store_values=case["store_values"][:, :0])
    got = retrieval_attention(**case, backend="triton")
    assert torch.allclose(got, retrieval_attention(**case, backend="torch"), atol=1e-5)


@pytest.mark.slow  # 15-30 s: every query and head is one interpreted program
@needs_interpreter
def test_layer_major_landmark_through_the_kernel_equals_the_window_by_window_sequence(monkeypatch):
    """The whole scorer with the kernel in place of the PyTorch path (the GPU's route), two windows
    and a partial third, fp32."""
    from transformers import LlamaConfig

    from lm_eval_longmem.models.landmark import layer_major
    from lm_eval_longmem.models.landmark.sequence import LandmarkSequence
    from lm_eval_longmem.models.runtime.llama_decoder import Decoder
    from tests.helpers.tiny_models import tiny_of, token_ids

    decoder, ids = Decoder(tiny_of(LlamaConfig)), token_ids(47, seed=4)
    sequence = LandmarkSequence(decoder, 4, 2, 20)
    with torch.no_grad():
        want = torch.cat([sequence.feed(ids[start : start + 20]) for start in range(0, len(ids), 20)])
    monkeypatch.setattr(
        layer_major,
        "retrieval_attention",
        lambda *args, **kwargs: retrieval_attention(*args, **kwargs, backend="triton"),
    )
    got = layer_major.LayerMajorLandmark(decoder, 4, 2, 20).hidden(ids)
    assert torch.allclose(got, want, atol=2e-5)
