"""Data parallelism under `accelerate launch` where lm-eval's HFLM does not set it up itself.

HFLM 0.4.13 splits the documents across processes only when it sees more than one GPU
(`gpus > 1`). Launched with several processes on a CPU (gloo) or on a single GPU, it builds
the Accelerator but leaves every process at rank 0 of 1: each one evaluates every document
and each writes a results file. `adopt_launched_processes` gives the wrapper the ranks that
accelerate launched, so the documents are split and rank 0 alone gathers and writes, as on a
multi-GPU node.

Every `longmem` method scores and generates each request on its own (bounded caches and
Infini-attention keep their memory per request; prefix reuse only saves work and gives the
same answers), so all of them run data-parallel; `tests/e2e/test_multi_process.py` holds two
processes against one.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def adopt_launched_processes(lm) -> bool:
    """Take the rank and world size from lm's Accelerator when HFLM left them at 0 of 1.

    Returns True when it changed them. Does nothing for a single process and when HFLM already
    split the work (several GPUs).
    """
    accelerator = getattr(lm, "accelerator", None)
    if accelerator is None or accelerator.num_processes <= 1 or getattr(lm, "_world_size", 1) != 1:
        return False
    lm._rank = accelerator.process_index
    lm._world_size = accelerator.num_processes
    if accelerator.is_main_process:
        logger.info(
            "Data parallel on %s: %d processes split the documents.", accelerator.device, accelerator.num_processes
        )
    return True
