"""Each task's headline numbers, read out of one results file's `results.<task>` mapping.

lm-eval stores metrics as "<name>,<filter>" with a sibling "<name>_stderr,<filter>"; our tasks
put a bucket in the name, zero-padded (`acc@len0512`, `acc@0010shots`, `ppl@01024`, see
`tasks/buckets.py`). Buckets are parsed back to integers here, so runs whose paddings differ
(a grid up to 999 vs one up to 4096) still share a column, and columns sort numerically.
A task missing from a file, or a metric missing from a task (an older results file, the
reduced forgetting-curve metric of `--model hf`), simply yields no number. Tasks that are not
ours (lm-eval's RULER, LongBench, ... run next to ours) get one column per numeric metric.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

PREFERRED_FILTER = "none"


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


def metric_values(metrics: dict) -> dict[str, tuple[float, float | None]]:
    """name -> (value, stderr) for the numeric metrics of one filter ("none" when present)."""
    by_filter: dict[str, dict[str, float]] = {}  # numbers as recorded (memory lengths stay ints)
    for key, value in metrics.items():
        if "," not in key or not _is_number(value):
            continue
        name, filter_name = key.rsplit(",", 1)
        by_filter.setdefault(filter_name, {})[name] = value
    if not by_filter:
        return {}
    chosen = by_filter.get(PREFERRED_FILTER) or next(iter(by_filter.values()))
    return {
        name: (value, chosen.get(f"{name}_stderr"))
        for name, value in chosen.items()
        if not name.endswith("_stderr")
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


def _bucket_headlines(task, metrics, prefix, suffix, column_name, higher_is_better=True):
    index = TASK_ORDER.index(task)
    return [
        Headline(Column(column_name(bucket), task, (index, 0, bucket), higher_is_better), value, stderr)
        for bucket, (value, stderr) in bucketed(metrics, prefix, suffix).items()
    ]


def _summary(task, metrics, metric, column_name, position, higher_is_better=True):
    pair = metric_values(metrics).get(metric)
    if pair is None:
        return []
    column = Column(column_name, task, (TASK_ORDER.index(task), 1, position), higher_is_better)
    return [Headline(column, pair[0], pair[1])]


def forgetting_curve(metrics: dict) -> list[Headline]:
    """Fine and coarse memory lengths; ">L" bounds come from the curve's own flags."""
    curve = metrics.get(f"curve,{PREFERRED_FILTER}")
    curve = curve if isinstance(curve, dict) else {}
    headlines = []
    for position, kind in enumerate(("fine", "coarse")):
        for headline in _summary("forgetting_curve", metrics, f"{kind}_memory_length", f"fc_{kind}", position):
            bound = bool(curve.get(f"{kind}_is_lower_bound", False))
            headlines.append(Headline(headline.column, headline.value, None, bound))
    return headlines


def passkey(metrics: dict) -> list[Headline]:
    task = "longmem_passkey"
    return _bucket_headlines(task, metrics, "acc@len", "", lambda n: f"passkey@{n}") + _summary(
        task, metrics, "acc", "passkey_all", 0
    )


def trec_manyshot(metrics: dict) -> list[Headline]:
    task = "longmem_trec_manyshot"
    return _bucket_headlines(task, metrics, "acc@", "shots", lambda n: f"trec@{n}shots") + _summary(
        task, metrics, "acc", "trec_all", 0
    )


def topicret(metrics: dict) -> list[Headline]:
    task = "longmem_topicret"
    headlines = []
    for position, which in enumerate(("first", "second", "third")):
        headlines += _summary(task, metrics, f"{which}_topic_acc", f"topicret_{which}", position)
    return headlines + _summary(task, metrics, "mean_acc", "topicret_mean", 3)


def perplexity(metrics: dict) -> list[Headline]:
    """`ppl@<length>` per length (lower is better); an overall `ppl` if the task reports one."""
    task = "longmem_perplexity"
    return _bucket_headlines(task, metrics, "ppl@", "", lambda n: f"ppl@{n}", higher_is_better=False) + _summary(
        task, metrics, "ppl", "ppl_all", 0, higher_is_better=False
    )


EXTRACTORS: dict[str, Callable[[dict], list[Headline]]] = {
    "forgetting_curve": forgetting_curve,
    "longmem_passkey": passkey,
    "longmem_trec_manyshot": trec_manyshot,
    "longmem_topicret": topicret,
    "longmem_perplexity": perplexity,
}
TASK_ORDER = list(EXTRACTORS)


def other_task(task: str, metrics: dict, higher_is_better: dict | None = None) -> list[Headline]:
    """Any other task (lm-eval's `ruler`, `longbench`, ...): each numeric metric as a column
    `<task>:<metric>`, after ours, in the direction the results file records for it."""
    direction = higher_is_better if isinstance(higher_is_better, dict) else {}
    return [
        Headline(Column(f"{task}:{name}", task, (len(TASK_ORDER), task, name), direction.get(name) is not False),
                 value, stderr)
        for name, (value, stderr) in sorted(metric_values(metrics).items())
    ]


def headlines_of(results: dict, higher_is_better: dict | None = None) -> dict[str, list[Headline]]:
    """task -> its headlines for every task of one results file: ours by their extractors, any
    other task by its numeric metrics (`higher_is_better` is the file's mapping of that name)."""
    found = {}
    directions = higher_is_better if isinstance(higher_is_better, dict) else {}
    for task, metrics in results.items():
        if not isinstance(metrics, dict):
            continue
        extract = EXTRACTORS.get(task)
        headlines = extract(metrics) if extract else other_task(task, metrics, directions.get(task))
        if headlines:
            found[task] = headlines
    return dict(sorted(found.items(), key=lambda item: (TASK_ORDER.index(item[0]) if item[0] in EXTRACTORS else len(TASK_ORDER), item[0])))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
