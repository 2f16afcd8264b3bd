"""Faults for the fault-injection tests: damage a file the way a crash, a full disk or a stray
write would, kill a process at a chosen point, and keep count of what was injected and what
recovered (the slow test prints the totals)."""

from __future__ import annotations

import dataclasses
import glob
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

DAMAGES = ("truncated", "empty", "zeroed", "garbage")


def damage(path: Path, how: str, rng: np.random.Generator | None = None) -> None:
    """Damage `path` in place: cut at a random point (the middle without `rng`), emptied, every
    byte zeroed (a crash after the size was recorded, before the data), or random bytes."""
    data = path.read_bytes()
    if how == "truncated":  # by at least one byte that is not trailing white space (a JSON file's "\n")
        kept = len(data.rstrip())
        cut = int(rng.integers(1, kept)) if rng is not None and kept > 1 else kept // 2
        path.write_bytes(data[:cut])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "zeroed":
        path.write_bytes(bytes(len(data)))
    elif how == "garbage":
        rng = rng or np.random.default_rng(0)
        path.write_bytes(rng.integers(0, 256, len(data), dtype=np.uint8).tobytes())
    else:
        raise ValueError(how)


def cached_requests(use_cache: Path) -> int:
    """Rows in the --use_cache database(s) of `--model longmem` runs given `use_cache` (0 if none yet)."""
    total = 0
    for database in glob.glob(f"{glob.escape(str(use_cache))}_longmem__*_rank*.db"):
        try:
            # read-write, as lm-eval opens it: a journal left hot by a killed writer is rolled
            # back first (a read-only connection cannot, and then reads nothing)
            connection = sqlite3.connect(f"file:{database}?mode=rw", uri=True, timeout=0.2)
            try:
                total += connection.execute("SELECT COUNT(*) FROM unnamed").fetchone()[0]
            finally:
                connection.close()
        except sqlite3.Error:
            pass  # not created yet, or being created
    return total


@dataclasses.dataclass
class Killed:
    returncode: int | None  # -9 when it was killed; its own status when it ended first
    output: str
    killed: bool


def kill_when(
    command: list[str],
    ready: Callable[[], bool],
    env: dict | None = None,
    timeout: float = 300,
    log: Path | None = None,
    delay: float = 0.0,
    poll: float = 0.01,
) -> Killed:
    """Run `command`; SIGKILL it `delay` seconds after `ready()` is first true (polled every `poll`
    seconds). Output goes to a file (never a pipe that could fill and stall the process)."""
    log = log or Path(os.environ.get("TMPDIR", "/tmp")) / f"kill_when_{os.getpid()}_{time.monotonic_ns()}.log"
    with open(log, "w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        killed = False
        try:
            while process.poll() is None and time.monotonic() < deadline:
                if ready():
                    time.sleep(delay)
                    process.send_signal(signal.SIGKILL)
                    killed = True
                    break
                time.sleep(poll)
        finally:
            if process.poll() is None and not killed:
                process.kill()
            process.wait()
    return Killed(process.returncode, log.read_text(errors="replace"), killed)


def process_gone(pid: int, timeout: float = 10) -> bool:
    """Whether process `pid` has ended (a zombie waiting to be reaped counts as ended)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def processes_mentioning(text: str) -> list[int]:
    """Ids of live processes whose command line contains `text` (to find a killed parent's
    children, which no longer have it as their parent)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in command and not process_gone(int(entry.name), timeout=0):
            found.append(int(entry.name))
    return found


def none_left_mentioning(text: str, timeout: float = 10) -> bool:
    """Whether every process mentioning `text` has ended within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while processes_mentioning(text):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


@dataclasses.dataclass
class FaultTally:
    """Faults injected and how each ended: recovered (rebuilt or resumed, results right) or lost."""

    injected: int = 0
    recovered: int = 0
    lost: list[str] = dataclasses.field(default_factory=list)

    def record(self, what: str, recovered: bool) -> None:
        self.injected += 1
        if recovered:
            self.recovered += 1
        else:
            self.lost.append(what)

    def __str__(self) -> str:
        return f"{self.injected} faults injected, {self.recovered} recovered, {len(self.lost)} lost {self.lost}"
