"""What a run is about to cost, said before it starts.

A default `forgetting_curve` run plans hundreds of requests with inputs up to 16k tokens: on a
laptop CPU that is hours, and nothing else says so. Before scoring or generating, the wrapper
prints the plan (requests, input lengths, tokens in all, the tasks) and, for a run big enough to
matter, an estimate of its time from two timed passes on this machine — a fit of
`a*L + b*L^2` per input (linear layers plus attention), summed over the planned inputs — with the
options that make the run smaller.

The passes are at the run's longest input capped at 4,096 tokens and a quarter of that. Shorter
probes (256 and 1,024) put the quadratic term in the noise and, extrapolated to 16k-token inputs,
announce far less than the run takes (measured in docs/benchmarks.md). The longer probe costs
seconds on a CPU, against a run of at least `ESTIMATE_ABOVE_TOKENS` tokens.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

ESTIMATE_ABOVE_TOKENS = 100_000  # smaller runs take seconds to a few minutes: no timing pass
ESTIMATE_ABOVE_ENV = "LM_EVAL_LONGMEM_ESTIMATE_ABOVE"  # tokens; 0 estimates every run
LONGEST_PROBE = 4096  # tokens: the longer timed pass, when the run's inputs are at least this long
SHRINKING_OPTIONS = ("lengths", "samples", "windows", "max_length", "shots")


@dataclass(frozen=True)
class CostPlan:
    kind: str  # "scoring" or "generation"
    lengths: tuple[int, ...]  # tokens each request runs through the model
    tasks: tuple[str, ...]

    @property
    def total_tokens(self) -> int:
        return sum(self.lengths)

    def describe(self) -> str:
        counts = Counter(self.lengths)
        distinct = sorted(counts)
        shown = (
            ", ".join(f"{n:,} x{counts[n]}" for n in distinct)
            if len(distinct) <= 8
            else f"{distinct[0]:,} to {distinct[-1]:,}"
        )
        tasks = f" for {', '.join(self.tasks)}" if self.tasks else ""
        return (
            f"longmem: {len(self.lengths):,} {self.kind} requests{tasks}; input lengths (tokens): {shown}; "
            f"{self.total_tokens:,} tokens in all"
        )


def fit_cost(timings: Sequence[tuple[int, float]]) -> Callable[[int], float]:
    """Seconds for an input of L tokens from timed (L, seconds) passes: a*L + b*L^2 through two
    points (b >= 0: attention never makes a longer input cheaper per token), linear from one."""
    (l1, t1), *rest = sorted(timings)
    if not rest:
        return lambda length: t1 * length / l1
    l2, t2 = rest[-1]
    b = max(0.0, (t2 / l2 - t1 / l1) / (l2 - l1))
    a = max(0.0, t1 / l1 - b * l1)
    return lambda length: a * length + b * length * length


def probe_lengths(longest: int) -> list[int]:
    """The two timed inputs: as long as affordable, since the fit is extrapolated to `longest`."""
    long = max(1, min(longest, LONGEST_PROBE))
    return sorted({max(1, long // 4), long})


def estimate_seconds(lengths: Iterable[int], time_one: Callable[[int], float], longest: int) -> float:
    probes = probe_lengths(longest)
    time_one(probes[0])  # warm-up: first-call costs (allocations, kernel builds) are not per request
    cost = fit_cost([(length, time_one(length)) for length in probes])
    return sum(cost(length) for length in lengths)


def shrink_hint(tasks: Iterable[str]) -> str:
    """The options that make these tasks' runs smaller, read from their declared options classes."""
    from lm_eval_longmem.tasks import registry

    hints = []
    for task in tasks:
        declaration = registry.find(task)
        if declaration is None or declaration.options is None:
            continue
        names = [f.name for f in declaration.options.fields() if f.name in SHRINKING_OPTIONS]
        if names:
            hints.append(f"{task}: " + ", ".join(f"{declaration.options.prefix}{name}" for name in names))
    shown = f" or the tasks' options in --metadata ({'; '.join(hints)})" if hints else ""
    return f"To make it smaller: --limit N (documents per task){shown}."


def human_duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, math.ceil(seconds))} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def announce(plan: CostPlan, time_one: Callable[[int], float] | None, device: str, write=None) -> float | None:
    """Print the plan, and the estimate when the run is big; returns the estimate (seconds)."""
    write = write or (lambda line: print(line, file=sys.stderr, flush=True))
    if not plan.lengths:
        return None
    write(plan.describe() + ".")
    if time_one is None or plan.total_tokens < int(os.environ.get(ESTIMATE_ABOVE_ENV, ESTIMATE_ABOVE_TOKENS)):
        return None
    started = time.perf_counter()
    seconds = estimate_seconds(plan.lengths, time_one, max(plan.lengths))
    write(
        f"longmem: estimated {human_duration(seconds)} on this machine ({device}; two timed passes, "
        f"{time.perf_counter() - started:.1f} s). " + shrink_hint(plan.tasks)
    )
    return seconds
