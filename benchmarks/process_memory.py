"""Peak resident memory of this process on Linux, for the CPU benchmarks (GPU ones use torch.cuda)."""

from __future__ import annotations

import re


def status_kib(field: str) -> int:
    """A /proc/self/status field in KiB, e.g. VmRSS (now) or VmHWM (peak since the last reset)."""
    with open("/proc/self/status") as fh:
        return int(re.search(rf"{field}:\s+(\d+)", fh.read()).group(1))


def reset_peak() -> None:
    """VmHWM back to the current RSS, so the next peak is the measured section's own."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
