"""The CPU's retrieval attention (`kernels/grouped_softmax/retrieval_cpu.c`) against the grouped
softmax written out query by query and against the PyTorch path; which calls it takes; what a
chosen block outside the store does."""

from __future__ import annotations

import pytest
import torch

from lm_eval_longmem.kernels.c_library import SWITCH_ENV
from lm_eval_longmem.kernels.grouped_softmax import retrieval_attention, retrieval_cpu
from lm_eval_longmem.kernels.grouped_softmax.retrieval_attention import _path
from tests.helpers.retrieval_attention_cases import random_case, written_out

pytestmark = pytest.mark.skipif(not retrieval_cpu.LIBRARY.available(), reason="no C compiler builds it here")


def arguments(case):
    names = ("slot_queries", "window_queries", "window_keys", "window_values", "store_keys", "store_values")
    return tuple(case[n] for n in names) + (case["chosen"], case["slot_valid"])


@pytest.mark.parametrize("softcap", [None, 2.0])
@pytest.mark.parametrize(
    "shape",
    [
        dict(),  # 4 query heads on 2 key-value heads, blocks of 4, windows of 8, head size 8
        dict(block=3, window=9, dim=6),  # nothing a power of two, the head size below one vector
        dict(heads=3, kv_heads=1, k=4, dim=37, block=5, window=10),  # one vector of 16 and a remainder
        dict(heads=2, kv_heads=2, windows=2, window=16, block=8, k=3, dim=64, blocks=3),
    ],
)
def test_the_c_function_equals_the_grouped_softmax_written_out(shape, softcap):
    """fp32 against float64 query by query: only the summation order differs."""
    case = random_case(**shape)
    got = retrieval_attention(**case, softcap=softcap, backend="c")
    assert got.dtype == torch.float32 and got.shape == case["window_queries"].shape
    torch.testing.assert_close(got.double(), written_out(case, softcap), rtol=0, atol=1e-5)
    torch.testing.assert_close(got, retrieval_attention(**case, softcap=softcap, backend="torch"), rtol=0, atol=1e-5)


def test_a_hand_case():
    """One head, head size 1, blocks of 2 (a member and its landmark), one window of 2, one slot.
    Place 1 is its block's landmark, so of its own block it reads key 0 only: logit 1 * ln 2, value
    3. Its slot reads a stored block whose member scores 4 and landmark 0: logit 0, value 5 (the
    only member's). Weights 2/3 and 1/3: 11/3. Place 0 (query 0, its slot invalid) reads itself: 3."""
    case = dict(
        slot_queries=torch.ones(1, 2, 1, 1),
        window_queries=torch.tensor([[[0.0], [1.0]]]),
        window_keys=torch.tensor([[[2.0], [9.0]]]).log(),
        window_values=torch.tensor([[[3.0], [4.0]]]),
        store_keys=torch.tensor([[[[4.0], [0.0]]]]),
        store_values=torch.tensor([[[[5.0], [6.0]]]]),
        chosen=torch.zeros(1, 2, 1, dtype=torch.long),
        slot_valid=torch.tensor([[[False], [True]]]),
        window=2,
        scaling=1.0,
    )
    got = retrieval_attention(**case, backend="c")
    assert got[0, :, 0].tolist() == pytest.approx([3.0, 11 / 3], rel=1e-6)


def test_without_slots_it_is_the_windows_grouped_softmax():
    case = random_case(k=2)
    for name in ("slot_queries", "chosen", "slot_valid"):
        case[name] = case[name][:, :, :0]
    case.update(store_keys=case["store_keys"][:, :0], store_values=case["store_values"][:, :0])
    torch.testing.assert_close(
        retrieval_attention(**case, backend="c"), retrieval_attention(**case, backend="torch"), rtol=0, atol=1e-5
    )


@pytest.mark.parametrize("threads", [1, 3, 7])
def test_any_number_of_threads_gives_the_same_output(threads):
    """Rows split over threads (3 and 7 do not divide the 4 x 24 rows): each row is computed alone."""
    case = random_case()
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = retrieval_attention(**case, backend="c")
        torch.set_num_threads(threads)
        assert torch.equal(retrieval_attention(**case, backend="c"), one)
    finally:
        torch.set_num_threads(before)


def test_an_invalid_slot_is_never_read_and_a_valid_one_must_be_in_the_store():
    case = random_case()
    blocks = case["store_keys"].shape[1]
    expected = retrieval_attention(**case, backend="c")
    case["chosen"] = torch.where(case["slot_valid"], case["chosen"], blocks + 100)  # garbage where invalid
    assert torch.equal(retrieval_attention(**case, backend="c"), expected)
    case["chosen"][case["slot_valid"]] = blocks
    with pytest.raises(IndexError, match=f"outside the store of {blocks} blocks"):
        retrieval_attention(**case, backend="c")


def test_the_path_is_chosen_by_device_dtype_and_gradients(monkeypatch):
    """auto: the C function for float32 CPU tensors without gradients, else PyTorch; backend='c' says why
    it cannot run a call; a misspelled backend names the valid ones."""
    case = random_case()
    assert _path("auto", arguments(case)) == "c"
    assert _path("auto", arguments(random_case(dtype=torch.bfloat16))) == "torch"
    with pytest.raises(RuntimeError, match="backend='c' cannot run this call: it takes float32, not torch.bfloat16"):
        _path("c", arguments(random_case(dtype=torch.bfloat16)))
    case["window_queries"].requires_grad_(True)
    assert _path("auto", arguments(case)) == "torch"
    with torch.no_grad():
        assert _path("auto", arguments(case)) == "c"
    with pytest.raises(RuntimeError, match="it computes no gradients"):
        _path("c", arguments(case))
    monkeypatch.setenv(SWITCH_ENV, "0")
    assert _path("auto", arguments(random_case())) == "torch"
    with pytest.raises(RuntimeError, match=f"{SWITCH_ENV}=0"):
        _path("c", arguments(random_case()))
    with pytest.raises(ValueError, match=r"backend must be one of \('auto', 'triton', 'c', 'torch'\), got 'cpu'"):
        _path("cpu", arguments(random_case()))
