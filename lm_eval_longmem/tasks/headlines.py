"""What a task's headline extractor (`<task>/headlines.py`) is made of: the leaderboard's
`Column` and `Headline`, and reading lm-eval's metric names back into numbers.

lm-eval stores metrics as "<name>,<filter>" with a sibling "<name>_stderr,<filter>"; our tasks
put a bucket in the name, zero-padded (`acc@len0512`, `acc@0010shots`, `ppl@01024`, see
`tasks/buckets.py`). Buckets are parsed back to integers here, so runs whose paddings differ
(a grid up to 999 vs one up to 4096) still share a column, and columns sort numerically.
A metric missing from a task (an older results file) simply yields no number.

An extractor gives each column its place within the task (`order`: buckets first, then
summaries); the leaderboard puts the task's own place in front (report/headlines.py), so the
extractor does not need to know where its task stands among the others.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

PREFERRED_FILTER = "none"
BUCKETS, SUMMARIES = 0, 1  # the first item of a column's order within its task


@dataclass(frozen=True)
class Column:
    """A leaderboard column; `order` places it (task first, then bucket, summaries last)."""

    name: str
    task: str
    order: tuple
    higher_is_better: bool = True


@dataclass(frozen=True)
class Headline:
    column: Column
    value: float
    stderr: float | None = None
    lower_bound: bool = False  # the true value is larger (a memory length still met at the longest L)


def length_text(length: float, lower_bound: bool) -> str:
    """A memory length as every format writes it: ">4096" when only a lower bound, else "4096"."""
    text = f"{length:.0f}"
    return f">{text}" if lower_bound else text


def three_decimals(cell: Headline) -> str:
    """How tables write an accuracy or a score, the default."""
    return f"{cell.value:.3f}"


def metric_values(metrics: dict) -> dict[str, tuple[float, float | None]]:
    """name -> (value, stderr) for the numeric metrics of one filter ("none" when present)."""
    by_filter: dict[str, dict[str, float]] = {}  # numbers as recorded (memory lengths stay ints)
    for key, value in metrics.items():
        if "," not in key or not is_number(value):
            continue
        name, filter_name = key.rsplit(",", 1)
        by_filter.setdefault(filter_name, {})[name] = value
    if not by_filter:
        return {}
    chosen = by_filter.get(PREFERRED_FILTER) or next(iter(by_filter.values()))
    return {
        name: (value, chosen.get(f"{name}_stderr")) for name, value in chosen.items() if not name.endswith("_stderr")
    }


def bucketed(metrics: dict, prefix: str, suffix: str = "") -> dict[int, tuple[float, float | None]]:
    """{bucket: (value, stderr)} for the metrics named `<prefix><digits><suffix>`, sorted."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)" + re.escape(suffix) + "$")
    found = {}
    for name, pair in metric_values(metrics).items():
        match = pattern.match(name)
        if match:
            found[int(match.group(1))] = pair
    return dict(sorted(found.items()))


def bucket_headlines(
    task: str, metrics: dict, prefix: str, suffix: str, column_name: Callable[[int], str], higher_is_better: bool = True
) -> list[Headline]:
    """One column per bucket of the metrics `<prefix><bucket><suffix>`, in bucket order."""
    return [
        Headline(Column(column_name(bucket), task, (BUCKETS, bucket), higher_is_better), value, stderr)
        for bucket, (value, stderr) in bucketed(metrics, prefix, suffix).items()
    ]


def summary_headline(
    task: str, metrics: dict, metric: str, column_name: str, position: int, higher_is_better: bool = True
) -> list[Headline]:
    """The column `column_name` for metric `metric`, placed `position`-th after the buckets."""
    pair = metric_values(metrics).get(metric)
    if pair is None:
        return []
    return [Headline(Column(column_name, task, (SUMMARIES, position), higher_is_better), pair[0], pair[1])]


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
