"""How many aten ops a piece of code dispatches, and how many of them read a value back to the host.

On a GPU every op that computes is a kernel launch, and a call that launches thousands of small
kernels is bound by the host, whatever the arithmetic; every host read (`.item()`, `int(tensor)`,
`nonzero`, a data-dependent output size, a copy to the CPU) drains the device's queue. Neither
costs anything visible on a CPU, but both are the same ops there: counting them under a
`TorchDispatchMode` gives, on any machine and deterministically, the figure that sets a GPU
scorer's speed. Views, allocations and other metadata ops launch nothing and are not counted.
"""

from __future__ import annotations

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_aten = torch.ops.aten
# Ops that only allocate, alias or describe a tensor: no kernel runs.
METADATA_OPS = frozenset(
    {
        _aten.empty.memory_format,
        _aten.empty_strided.default,
        _aten.empty_like.default,
        _aten.new_empty.default,
        _aten.new_empty_strided.default,
        _aten.detach.default,
        _aten.alias.default,
        _aten.lift_fresh.default,
        _aten._unsafe_view.default,
        _aten._reshape_alias.default,
        _aten.set_.source_Storage_storage_offset,
        _aten.resize_.default,
    }
)
# Ops whose result the host must wait for: a value read back, or an output whose size depends on the data.
HOST_READ_OPS = frozenset(
    {
        _aten._local_scalar_dense.default,  # .item(), float(t), int(t), bool(t)
        _aten.nonzero.default,
        _aten.nonzero_static.default,
        _aten.masked_select.default,
        _aten._unique2.default,
        _aten.unique_dim.default,
        _aten.unique_consecutive.default,
        _aten.bincount.default,
        _aten.repeat_interleave.Tensor,
        _aten.equal.default,
        _aten.is_nonzero.default,
    }
)


def _is_host_copy(func, args, kwargs) -> bool:
    """A copy from a device to the CPU (`.cpu()`, `.to("cpu")`, `.tolist()` of a device tensor)."""
    if func is _aten._to_copy.default:
        target = kwargs.get("device")
        return args[0].device.type != "cpu" and target is not None and torch.device(target).type == "cpu"
    if func is _aten.copy_.default:
        return args[0].device.type == "cpu" and args[1].device.type != "cpu"
    return False


def _boolean_index(func, args) -> bool:
    """`x[mask]`: indexing by a boolean tensor has a data-dependent size."""
    if func is not _aten.index.Tensor:
        return False
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in (args[1] or ()))


class DispatchCount(TorchDispatchMode):
    """`with DispatchCount() as count: ...`, then `count.ops` (ops that compute), `count.host_reads`
    and `count.by_op` (a Counter of op names, for finding what to cut)."""

    def __init__(self):
        super().__init__()
        self.ops = 0
        self.host_reads = 0
        self.by_op: Counter[str] = Counter()
        self.reads_by_op: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func.is_view or func in METADATA_OPS:
            return out
        self.ops += 1
        name = str(func.overloadpacket.__name__)
        self.by_op[name] += 1
        if func in HOST_READ_OPS or _boolean_index(func, args) or _is_host_copy(func, args, kwargs):
            self.host_reads += 1
            self.reads_by_op[name] += 1
        return out
