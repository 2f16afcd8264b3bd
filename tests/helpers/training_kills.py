"""SIGKILL a training run at a chosen point of its work, seen from outside by polling its folder
every half millisecond: while it writes a checkpoint (`checkpoints/step-N.partial` exists), while
it deletes an old one (`.deleting`), while it writes the export (`export.partial`), or after its
n-th logged step. A checkpoint or export write of the tiny model lasts about 8-12 ms, so a kill
soon after the folder appears lands inside it; `where_it_landed` says afterwards what it hit.
What an earlier kill left half-done (`stale`, told apart by inode) triggers nothing: the new
run only tidies it after its start-up."""

from __future__ import annotations

import dataclasses
import os
import random
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from tests.helpers.fault_injection import kill_when
from tests.helpers.training_helpers import tiny_overrides

CLI = str(Path(sys.executable).absolute().parent / "lm-eval-longmem")
ENV = {
    **os.environ,
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "PYTHONUNBUFFERED": "1",
}  # its lines land before a kill


def train_command(recipe: str, model_dir, corpus_file, output_dir: Path, **settings) -> list[str]:
    return [CLI, "train", recipe, *tiny_overrides(model_dir, corpus_file, output_dir, **settings)]


LEFTOVER = (".partial", ".deleting", ".old")


def entries(folder: Path) -> set[tuple[str, int]]:
    """Names in `folder` with their inode (a leftover of an earlier run keeps its inode)."""
    try:
        return {(entry.name, entry.inode()) for entry in os.scandir(folder)}
    except OSError:
        return set()


def leftovers(output_dir: Path) -> set[tuple[str, int]]:
    """The half-done folders in a run folder now (before a run starts: an earlier kill's)."""
    found = entries(output_dir) | entries(output_dir / "checkpoints")
    return {(name, inode) for name, inode in found if name.endswith(LEFTOVER)}


def logged_steps(output_dir: Path) -> int:
    try:
        return (output_dir / "metrics.jsonl").read_bytes().count(b"\n")
    except OSError:
        return 0


def checkpoint_write(output_dir: Path, at_least_step: int = 0, stale: frozenset = frozenset()) -> Callable[[], bool]:
    def writing() -> bool:
        new = entries(output_dir / "checkpoints") - stale
        found = (re.fullmatch(r"step-(\d+)\.partial", name) for name, _ in new)
        return any(m and int(m.group(1)) >= at_least_step for m in found)

    return writing


def checkpoint_deletion(output_dir: Path, stale: frozenset = frozenset()) -> Callable[[], bool]:
    return lambda: any(name.endswith(".deleting") for name, _ in entries(output_dir / "checkpoints") - stale)


def export_write(output_dir: Path, stale: frozenset = frozenset()) -> Callable[[], bool]:
    return lambda: any(name == "export.partial" for name, _ in entries(output_dir) - stale)


def after_steps(output_dir: Path, steps: int) -> Callable[[], bool]:
    return lambda: logged_steps(output_dir) >= steps


@dataclasses.dataclass
class Attempt:
    killed: bool  # False: the run ended before the trigger fired
    returncode: int
    output: str


def run_until(
    command: list[str], trigger: Callable[[], bool], delay: float, log: Path, timeout: float = 600
) -> Attempt:
    """Run `command`; SIGKILL it `delay` seconds after `trigger()` first holds (polled every 0.5 ms:
    a tiny run's checkpoint write lasts milliseconds)."""
    result = kill_when(command, trigger, env=ENV, timeout=timeout, log=log, delay=delay, poll=0.0005)
    return Attempt(result.killed and result.returncode == -signal.SIGKILL, result.returncode, result.output)


def where_it_landed(output_dir: Path, stale: frozenset = frozenset()) -> str:
    """What a killed run was doing, from what it left half-done (`stale`: what an earlier kill
    left, there before this run started)."""
    now = leftovers(output_dir)
    names = {name for name, _ in now - stale}
    if now & stale:
        return "start-up (before tidying)"
    if any(re.fullmatch(r"step-\d+\.partial", name) for name in names):
        return "checkpoint write"
    if names & {"export.partial", "export.old"}:
        return "export write"
    if names:
        return "checkpoint deletion"
    return "between writes"


def resumed_step(output: str) -> int:
    """The step a run resumed from (0: it started afresh)."""
    found = re.search(r"Resumed from \S+ at step (\d+)\.", output)
    return int(found.group(1)) if found else 0


def random_trigger(
    rng: random.Random, output_dir: Path, max_steps: int, save_every: int
) -> tuple[str, Callable, float]:
    """A kind of kill, its trigger and delay, drawn at random; triggers ignore an earlier kill's leftovers."""
    stale = frozenset(leftovers(output_dir))
    kind = rng.choice(["between writes", "checkpoint write", "checkpoint deletion", "export write"])
    if kind == "between writes":
        return kind, after_steps(output_dir, logged_steps(output_dir) + rng.randint(1, 8)), rng.uniform(0, 0.02)
    if kind == "checkpoint write":
        done = logged_steps(output_dir)
        target = rng.choice([s for s in range(save_every, max_steps, save_every) if s > done] + [max_steps])
        return kind, checkpoint_write(output_dir, target, stale), rng.uniform(0, 0.006)
    if kind == "checkpoint deletion":
        return kind, checkpoint_deletion(output_dir, stale), rng.uniform(0, 0.001)
    return kind, export_write(output_dir, stale), rng.uniform(0, 0.008)
