"""What a run is about to cost, said before it starts.

A default `forgetting_curve` run plans hundreds of requests with inputs up to 16k tokens: on a
laptop CPU that is hours, and nothing else says so. Before scoring or generating, the wrapper
prints the plan (requests, input lengths, tokens in all, the tasks) and, for a run big enough to
matter, an estimate of its time from two timed passes on this machine — a fit of
`a*L + b*L^2` per input (linear layers plus attention), summed over the planned inputs — with the
options that make the run smaller.

The passes are at the run's longest input capped at 4,096 tokens and a quarter of that. Shorter
probes (256 and 1,024) put the quadratic term in the noise and, extrapolated to 16k-token inputs,
announce far less than the run takes (measured in docs/benchmarks.md). Each probe length is
timed `PROBE_REPEATS` times after one warm-up pass: one timing each announced 8-30% more than
the run took on a quiet machine (a stall or a first-call cost lands in the fit and is
extrapolated); the fit goes through the medians, and the announced range through each probe's
fastest and slowest pass, so its width says how steady the machine was. The probes cost seconds
on a CPU, against a run of at least `ESTIMATE_ABOVE_TOKENS` tokens.
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
PROBE_REPEATS = 3  # timed passes per probe length: the fit takes their median
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
        # a generation request's length counts its prompt and the tokens it may generate
        # (max_gen_toks): a 253-token passkey prompt shows as 263, which "input" would misname
        what = "input lengths" if self.kind == "scoring" else "prompt + max_gen_toks lengths"
        return (
            f"longmem: {len(self.lengths):,} {self.kind} requests{tasks}; {what} (tokens): {shown}; "
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


@dataclass(frozen=True)
class Estimate:
    """Seconds for the whole run: through the probes' medians, and through their fastest and slowest passes."""

    seconds: float
    low: float
    high: float


def estimate_seconds(lengths: Iterable[int], time_one: Callable[[int], float], longest: int) -> Estimate:
    probes = probe_lengths(longest)
    time_one(probes[0])  # warm-up: first-call costs (allocations, kernel builds) are not per request
    timings = {length: sorted(time_one(length) for _ in range(PROBE_REPEATS)) for length in probes}
    lengths = list(lengths)

    def total(pick: Callable[[list[float]], float]) -> float:
        cost = fit_cost([(length, pick(times)) for length, times in timings.items()])
        return sum(cost(length) for length in lengths)

    central, fastest, slowest = total(lambda t: t[len(t) // 2]), total(lambda t: t[0]), total(lambda t: t[-1])
    # extrapolated, the fit through the fastest passes can exceed the median's (a steeper b): order the ends
    return Estimate(central, min(central, fastest, slowest), max(central, fastest, slowest))


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


def _unit(seconds: float) -> str:
    return "s" if seconds < 90 else "min" if seconds < 90 * 60 else "h"


def _number(seconds: float, unit: str) -> str:
    if unit == "s":
        return str(max(1, math.ceil(seconds)))
    return f"{seconds / 60:.0f}" if unit == "min" else f"{seconds / 3600:.1f}"


def human_duration(seconds: float) -> str:
    unit = _unit(seconds)
    return f"{_number(seconds, unit)} {unit}"


def human_range(estimate: Estimate) -> str:
    """'40-47 min (median 44 min)', both ends in the high end's unit; one figure when they agree."""
    unit = _unit(estimate.high)
    low, high = _number(estimate.low, unit), _number(estimate.high, unit)
    if low == high:
        return human_duration(estimate.seconds)
    return f"{low}-{high} {unit} (median {human_duration(estimate.seconds)})"


def announce(plan: CostPlan, time_one: Callable[[int], float] | None, device: str, write=None) -> Estimate | None:
    """Print the plan, and the estimate when the run is big; returns the estimate."""
    write = write or (lambda line: print(line, file=sys.stderr, flush=True))
    if not plan.lengths:
        return None
    write(plan.describe() + ".")
    if time_one is None or plan.total_tokens < int(os.environ.get(ESTIMATE_ABOVE_ENV, ESTIMATE_ABOVE_TOKENS)):
        return None
    started = time.perf_counter()
    estimate = estimate_seconds(plan.lengths, time_one, max(plan.lengths))
    probes = " and ".join(f"{n:,}" for n in probe_lengths(max(plan.lengths)))
    write(
        f"longmem: estimated {human_range(estimate)} on this machine ({device}; inputs of {probes} tokens "
        f"timed {PROBE_REPEATS} times each, {time.perf_counter() - started:.1f} s). " + shrink_hint(plan.tasks)
    )
    return estimate
