"""Stated-CLM's merge on the CPU (`models/bounded_cache/fisher_average_cpu.c`) against its reference, the
ATen path of `merging.fisher_average`: a hand case, random caches with runs of every length, zero
gradients and layers that merge nothing; and group ids that are not runs."""

from __future__ import annotations

import pytest
import torch

from lm_eval_longmem.models.bounded_cache import fisher_average_cpu, merging
from lm_eval_longmem.models.bounded_cache.merging import merge_groups

pytestmark = pytest.mark.skipif(not fisher_average_cpu.LIBRARY.available(), reason="no C compiler builds it here")


def reference(monkeypatch, x, grad, groups, num_groups):
    with monkeypatch.context() as aten_only:
        aten_only.setattr(fisher_average_cpu, "takes", lambda x, grad: False)
        return merging.fisher_average(x, grad, groups, num_groups)


def test_a_hand_case():
    """Entries 1 and 2 of one head merge (gradients 1 and 3 on the first element: weights 1/9 and 1 after
    dividing by the largest, 3); their second element has no gradient, so it is the plain mean."""
    x = torch.tensor([[5.0, 5.0], [1.0, 2.0], [10.0, 4.0], [7.0, 7.0]]).view(1, 1, 1, 4, 2)
    grad = torch.tensor([[9.0, 9.0], [1.0, 0.0], [3.0, 0.0], [9.0, 9.0]]).view(1, 1, 1, 4, 2)
    groups = torch.tensor([[0, 1, 1, 2]])
    out = fisher_average_cpu.cpu_fisher_average(x, grad, groups, 3)[0, 0, 0]
    assert out[0].tolist() == [5.0, 5.0] and out[2].tolist() == [7.0, 7.0]  # merged with nothing: as they were
    assert out[1].tolist() == pytest.approx([(1 / 9 * 1 + 1 * 10) / (1 / 9 + 1), 3.0], rel=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_c_merge_equals_the_aten_merge(monkeypatch, seed):
    """Keys and values of 3 layers, 2 heads, 40 entries, head size 5 (no whole vector): runs of two and
    one of six; layer 1 has no gradient at all (plain means), and a run without gradients falls back
    to the mean in layer 0; layer 2 merges nothing. float32 against the reference's own float32: only
    the order of the sums and fused multiply-adds differ."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, 2, 40, 5, generator=generator)
    grad = torch.randn(2, 3, 2, 40, 5, generator=generator)
    grad[:, 0, :, 14:16] = 0.0
    grad[:, 1] = 0.0
    pairs = torch.zeros(3, 39, dtype=torch.bool)
    pairs[:, 12:24:2] = True  # entries (12, 13), (14, 15), ... (22, 23)
    pairs[:, 30:35] = True  # entries 30 to 35
    pairs[2] = False
    groups = merge_groups(pairs)
    merged = 40 - 11  # layers 0 and 1 (one stacked call needs one number of groups)
    got = fisher_average_cpu.cpu_fisher_average(x[:, :2], grad[:, :2], groups[:2], merged)
    torch.testing.assert_close(got, reference(monkeypatch, x[:, :2], grad[:, :2], groups[:2], merged))
    alone = fisher_average_cpu.cpu_fisher_average(x[:, 2:], grad[:, 2:], groups[2:], 40)
    assert torch.equal(alone, x[:, 2:])  # nothing merged: every entry as it was


def test_tiny_gradients_still_weigh(monkeypatch):
    """Gradients of 1e-25 square to nothing in float32; divided by the largest first, they weigh as
    large ones would (the reference does the same)."""
    x = torch.tensor([[1.0], [4.0]]).view(1, 1, 1, 2, 1)
    grad = torch.tensor([[1e-25], [3e-25]]).view(1, 1, 1, 2, 1)
    groups = torch.tensor([[0, 0]])
    out = fisher_average_cpu.cpu_fisher_average(x, grad, groups, 1)
    assert out.item() == pytest.approx((1 / 9 * 1 + 4) / (1 / 9 + 1), rel=1e-6)
    torch.testing.assert_close(out, reference(monkeypatch, x, grad, groups, 1))


def test_the_cpu_merge_is_what_merging_runs_on_float32_cpu_tensors(monkeypatch):
    calls = []
    monkeypatch.setattr(fisher_average_cpu, "cpu_fisher_average", lambda *args: calls.append(args) or args[0])
    x = torch.zeros(1, 1, 1, 3, 2)
    groups = torch.tensor([[0, 1, 2]])
    merging.fisher_average(x, x, groups, 3)
    merging.fisher_average(x.double(), x.double(), groups, 3)  # the reference takes other dtypes
    assert len(calls) == 1


def test_group_ids_that_are_not_runs_are_refused():
    x = torch.zeros(1, 1, 1, 3, 2)
    for groups, num_groups in (
        (torch.tensor([[0, 2, 2]]), 2),
        (torch.tensor([[1, 1, 2]]), 2),
        (torch.tensor([[0, 1, 1]]), 3),
    ):
        with pytest.raises(ValueError, match="merge groups must be runs"):
            fisher_average_cpu.cpu_fisher_average(x, x, groups, num_groups)
