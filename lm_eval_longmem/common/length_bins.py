"""Input-length bins: powers of two, edges the user names (`0,4k,8k,32k`), or quantiles.

A bin is [low, high) in tokens; the last one of a list of edges is open ([32k, inf)), as
LongBench-E's "8k+" is. `k` means x1,024 and `m` x1,048,576, because long-context lengths are
powers of two written that way (RULER's 4096 is "4k").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from lm_eval_longmem.errors import UsageError

SUFFIXES = {"k": 1024, "m": 1024 * 1024}


class BinsError(UsageError):
    """--bins or --quantiles is malformed."""


@dataclass(frozen=True)
class LengthBin:
    low: int
    high: float  # math.inf for the last, open bin

    def holds(self, length: int) -> bool:
        return self.low <= length < self.high

    @property
    def label(self) -> str:
        if math.isinf(self.high):
            return f"{length_text(self.low)}+"
        return f"{length_text(self.low)}-{length_text(int(self.high))}"


def length_text(tokens: int) -> str:
    """4096 -> "4k", 1536 -> "1.5k", 100 -> "100": as lengths are written in papers."""
    for suffix, size in (("m", SUFFIXES["m"]), ("k", SUFFIXES["k"])):
        if tokens >= size and (tokens * 2) % size == 0:
            return f"{tokens / size:g}{suffix}"
    return str(tokens)


def parse_length(text: str) -> int:
    text = text.strip().lower()
    scale = SUFFIXES.get(text[-1:], 1)
    number = text[:-1] if scale != 1 else text
    try:
        value = float(number) * scale
    except ValueError:
        raise BinsError(f"--bins: {text!r} is not a length (write tokens as 4096, 4k or 1.5k)") from None
    if value < 0 or value != int(value):
        raise BinsError(f"--bins: {text!r} is not a whole, non-negative number of tokens")
    return int(value)


def bins_from_edges(text: str) -> list[LengthBin]:
    """`0,4k,8k,32k` -> [0, 4k), [4k, 8k), [8k, 32k), [32k, inf)."""
    edges = [parse_length(part) for part in text.split(",") if part.strip()]
    if not edges:
        raise BinsError("--bins: give at least one edge, e.g. --bins 0,4k,8k,32k")
    if any(high <= low for low, high in zip(edges, edges[1:])):
        raise BinsError(f"--bins {text}: the edges must increase (e.g. 0,4k,8k,32k)")
    return [LengthBin(low, high) for low, high in zip(edges, [*edges[1:], math.inf])]


def power_of_two_bins(lengths: Sequence[int]) -> list[LengthBin]:
    """[2^k, 2^(k+1)) from the shortest input's power of two to the longest's ([0, 1) for empty inputs)."""
    if not lengths:
        return []
    first = max(0, math.floor(math.log2(max(1, min(lengths)))))
    last = math.floor(math.log2(max(1, max(lengths))))
    bins = [LengthBin(0, 1)] if min(lengths) == 0 else []
    return bins + [LengthBin(2**k, 2 ** (k + 1)) for k in range(first, last + 1)]


def power_of_two_bin(length: int) -> LengthBin:
    """The bin [2^k, 2^(k+1)) that holds `length` ([0, 1) for an empty input)."""
    if length < 1:
        return LengthBin(0, 1)
    low = 1 << (length.bit_length() - 1)
    return LengthBin(low, 2 * low)


def quantile_bins(lengths: Sequence[int], count: int) -> list[LengthBin]:
    """`count` bins holding about equal numbers of inputs (fewer when lengths repeat)."""
    if count < 1:
        raise BinsError(f"--quantiles {count}: give a number of bins of 1 or more")
    if not lengths:
        return []
    ordered = sorted(lengths)
    edges = sorted({ordered[min(len(ordered) - 1, (len(ordered) * i) // count)] for i in range(count)})
    edges[0] = min(edges[0], ordered[0])
    return [LengthBin(low, high) for low, high in zip(edges, [*edges[1:], math.inf])]


def bin_of(length: int, bins: Sequence[LengthBin]) -> LengthBin | None:
    """The bin that holds `length`, None below the first edge."""
    for candidate in bins:
        if candidate.holds(length):
            return candidate
    return None
