"""Count the aten ops a piece of code dispatches, and its host reads, with a TorchDispatchMode.

On a GPU every op that computes is a kernel launch, and an op that reads a value back (`.item()`,
`int(tensor)`) or whose output size depends on the data (`nonzero`, boolean indexing, `unique`)
drains the queue. On the CPU the same ops are dispatched, so counting them here says how a scorer
will behave on a GPU, deterministically. Views, `empty` and other metadata-only ops launch nothing
and are not counted.
"""

from __future__ import annotations

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# ops that allocate or describe memory without computing anything
_NO_COMPUTE = {
    "aten::empty",
    "aten::empty_strided",
    "aten::empty_like",
    "aten::new_empty",
    "aten::new_empty_strided",
    "aten::lift_fresh",
    "aten::detach",
    "aten::alias",
    "aten::_reshape_alias",
    "aten::resize_",
    "aten::set_",
    "aten::sym_size",
    "aten::sym_stride",
    "aten::sym_numel",
    "aten::sym_storage_offset",
    "aten::is_contiguous",
    "aten::dim",
    "aten::size",
    "aten::stride",
    "aten::numel",
    "aten::is_same_size",
}
# ops that wait for the device: a value read back, or an output whose size depends on the data
HOST_READS = {
    "aten::_local_scalar_dense",
    "aten::item",
    "aten::nonzero",
    "aten::masked_select",
    "aten::bincount",
    "aten::unique",
    "aten::_unique",
    "aten::_unique2",
    "aten::unique_consecutive",
    "aten::unique_dim",
    "aten::repeat_interleave",  # with a tensor of repeats, sizes its output from the data
}


class DispatchCounter(TorchDispatchMode):
    """`with DispatchCounter() as counted: ...`, then `counted.ops` (computing ops dispatched),
    `counted.host_reads` and `counted.by_name` (a Counter of every computing op by name)."""

    def __init__(self):
        super().__init__()
        self.by_name: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name
        if not (func.is_view or name in _NO_COMPUTE):
            self.by_name[name] += 1
        return func(*args, **(kwargs or {}))

    @property
    def ops(self) -> int:
        return sum(self.by_name.values())

    @property
    def host_reads(self) -> int:
        return sum(count for name, count in self.by_name.items() if name in HOST_READS)

    def reads(self) -> dict[str, int]:
        return {name: count for name, count in self.by_name.items() if name in HOST_READS}


def count_dispatch(fn, *args, **kwargs) -> tuple[DispatchCounter, object]:
    """Run fn(*args, **kwargs) under a fresh counter; (the counter, fn's result)."""
    with torch.no_grad(), DispatchCounter() as counted:
        result = fn(*args, **kwargs)
    return counted, result
