"""Document order that keeps every bucket represented under `lm_eval --limit N`.

lm-eval's `--limit N` keeps the first N documents of a task. Tasks whose metrics are per
bucket (a length, a length x depth cell, a shot count) therefore list their documents round
robin: the first sample of every bucket, then the second of every bucket, and so on. Any
N >= the number of buckets covers them all, and a larger N adds samples evenly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import zip_longest
from typing import TypeVar

T = TypeVar("T")
_GAP = object()


def round_robin(buckets: Iterable[Sequence[T]]) -> list[T]:
    """[[a1, a2], [b1], [c1, c2]] -> [a1, b1, c1, a2, c2]."""
    return [item for row in zip_longest(*buckets, fillvalue=_GAP) for item in row if item is not _GAP]
