"""Token ids to the device without waiting for it.

`torch.tensor(ids, device="cuda")` copies from pageable host memory, which PyTorch follows with a
stream synchronisation: the host waits until every kernel queued so far has run, once per chunk
of a chunked forward. From pinned memory the copy is queued like a kernel instead (the caching
host allocator keeps the pinned block until the copy has run).
"""

from __future__ import annotations

import torch


def ids_to_device(ids: list[int], device: torch.device) -> torch.Tensor:
    """A long tensor of `ids` on `device`, queued behind the work already there."""
    host = torch.tensor(ids, dtype=torch.long, device="cpu")
    if torch.device(device).type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)
