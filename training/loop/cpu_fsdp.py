"""FSDP on CPU processes (gloo): a CPU-only path, there so that the FSDP code runs in tests.

`accelerate launch --config_file fsdp.yaml` on a machine without GPUs (or with
`ACCELERATE_USE_CPU=true`) starts the processes and exports the FSDP settings
(`ACCELERATE_USE_FSDP=true`, `FSDP_VERSION`, `FSDP_STATE_DICT_TYPE`, ...), but accelerate 1.15's
`AcceleratorState` only turns GPU-like distributed types into FSDP: MULTI_CPU is not among them,
so the plugin is silently dropped and the run is plain DDP, with whole parameters on every process
and whole-model checkpoints. (`--cpu` is worse: one process.) torch's own FSDP2 (`fully_shard`)
works on CPU tensors over gloo, so after `Accelerator()` we switch the shared state to FSDP with
the plugin accelerate would have built from the same variables; `prepare` then shards the model
(DTensor parameters), `save_state` writes sharded checkpoints (torch.distributed.checkpoint) and
`get_state_dict` gathers the whole model for the export.

GPU runs never take this path: there accelerate already chose FSDP (or another type) itself.
"""

from __future__ import annotations

import os


def fsdp_requested() -> bool:
    """`accelerate launch` with an FSDP config (or `--use_fsdp`) sets this for every process."""
    return os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"


def use_fsdp_on_cpu(accelerator) -> bool:
    """Switch a multi-process CPU run that was asked for FSDP from DDP to FSDP, before anything is
    prepared. Returns whether it switched (False: not CPU, not several processes, no FSDP asked,
    or accelerate already chose FSDP)."""
    from accelerate.state import PartialState
    from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin

    state = accelerator.state
    if not fsdp_requested() or state.distributed_type != DistributedType.MULTI_CPU:
        return False
    plugin = FullyShardedDataParallelPlugin()  # reads the FSDP_* variables, as accelerate does
    if state.mixed_precision != "no":
        plugin.set_mixed_precision(state.mixed_precision)
    state.fsdp_plugin = plugin
    state.distributed_type = DistributedType.FSDP
    # Every later `AcceleratorState()` (accelerate makes them inside prepare, save_state, ...)
    # copies PartialState's values over its own, as accelerate's own FSDP set-up allows for.
    PartialState._shared_state["distributed_type"] = DistributedType.FSDP
    return True
