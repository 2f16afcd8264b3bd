"""Counting what a piece of code asks of the device, on the CPU.

On a GPU every computing aten op is a kernel launch, and a host read (`.item()`, `nonzero`, a boolean
index) drains the queue. A `TorchDispatchMode` sees every op that reaches a kernel, so counting there,
on the CPU, gives the launch count's shape (how it grows with chunks and layers) deterministically.
Views, `empty` and other metadata ops are not launches and are not counted.
"""

from __future__ import annotations

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# ops that only describe or allocate memory: no kernel runs
METADATA_OPS = frozenset(
    {
        "aten.view",
        "aten._unsafe_view",
        "aten.reshape",
        "aten.expand",
        "aten.as_strided",
        "aten.t",
        "aten.transpose",
        "aten.permute",
        "aten.unsqueeze",
        "aten.squeeze",
        "aten.slice",
        "aten.select",
        "aten.split",
        "aten.split_with_sizes",
        "aten.unbind",
        "aten.narrow",
        "aten.alias",
        "aten.detach",
        "aten.empty",
        "aten.empty_like",
        "aten.empty_strided",
        "aten.lift_fresh",
        "aten.sym_size",
        "aten.sym_stride",
        "aten.sym_numel",
        "aten.sym_storage_offset",
        "aten.is_same_size",
        "aten._reshape_alias",
        "aten.diagonal",
    }
)
# ops that make the host wait for the device: a value read, or an output sized by the data
HOST_READ_OPS = frozenset(
    {
        "aten._local_scalar_dense",
        "aten.nonzero",
        "aten.masked_select",
        "aten.bincount",
        "aten.unique",
        "aten._unique",
        "aten._unique2",
        "aten.unique_consecutive",
        "aten.unique_dim",
        "aten.index_put_with_bool",
    }
)


def op_name(func) -> str:
    """`aten.mm.default` -> `aten.mm` (overloads counted together)."""
    return f"{func.namespace}.{func._opname}"


class DispatchCounter(TorchDispatchMode):
    """Counts computing ops and host reads dispatched while active (`with DispatchCounter() as counter`)."""

    def __init__(self):
        super().__init__()
        self.ops: Counter[str] = Counter()
        self.host_reads: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = op_name(func)
        if name in HOST_READ_OPS or (name == "aten.index" and _has_bool_index(args)):
            self.host_reads[name] += 1
        if name not in METADATA_OPS:
            self.ops[name] += 1
        return func(*args, **(kwargs or {}))

    @property
    def total_ops(self) -> int:
        return sum(self.ops.values())

    @property
    def total_host_reads(self) -> int:
        return sum(self.host_reads.values())


def _has_bool_index(args) -> bool:
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in indices or ())
