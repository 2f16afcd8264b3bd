"""The dispatched-op counter the scoring-cost tests and benchmarks read: ops that compute are
counted, views and allocations are not, and every way of reading a value back to the host is
a host read."""

import torch

from lm_eval_longmem.models.runtime.dispatch_count import DispatchCount


def test_views_and_allocations_are_not_ops_computing_ops_are():
    x = torch.randn(4, 6)
    with DispatchCount() as count:
        y = x.view(24).unsqueeze(0).transpose(0, 1).expand(24, 3)
        torch.empty(5)
        x.unfold(1, 2, 2)
    assert count.ops == 0 and count.host_reads == 0
    with DispatchCount() as count:
        (y * 2).sum()
    assert count.ops == 2 and dict(count.by_op) == {"mul": 1, "sum": 1} and count.host_reads == 0


def test_every_kind_of_host_read_is_counted():
    x = torch.randn(4, 6)
    with DispatchCount() as count:
        float(x.sum())  # sum, then the read
        torch.nonzero(x > 0)  # gt, nonzero
        x[x > 0]  # gt, a boolean index
        bool(x.max() > 0)  # max, gt, the read
        torch.unique(x)
    assert count.host_reads == 5, count.reads_by_op
    assert count.ops == 10, count.by_op  # sum, read, gt, nonzero, gt, index, max, gt, read, unique
