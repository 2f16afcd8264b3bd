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


def run_worker(command: list[str], env: dict | None = None) -> dict:
    """Run one measurement in a fresh process (its peak memory is its own) and return the JSON
    object it prints last; its error output is shown if it fails."""
    import json
    import os
    import subprocess

    proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command[1:])} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_peak_rss(command: list[str], env: dict | None = None) -> tuple[int, str]:
    """Run a command to its end and return (its peak resident set in bytes, its error output):
    the child's own high-water mark from wait4, whatever else runs on the machine."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        text = errors.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{text[-3000:]}")
    return usage.ru_maxrss * 1024, text
