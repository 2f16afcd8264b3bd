"""Each task's headline numbers, read out of one results file's `results.<task>` mapping.

lm-eval stores metrics as "<name>,<filter>" with a sibling "<name>_stderr,<filter>"; our tasks
put a bucket in the name, zero-padded (`acc@len0512`, `acc@0010shots`, `ppl@01024`, see
`tasks/buckets.py`). Buckets are parsed back to integers here, so runs whose paddings differ
(a grid up to 999 vs one up to 4096) still share a column, and columns sort numerically.
A task missing from a file, or a metric missing from a task (an older results file), simply
yields no number. Tasks that are not ours (lm-eval's RULER, LongBench, ... run next to ours) get
one column per numeric metric.

The forgetting curve has two shapes. `--model longmem` scores every token, so its curve has the
paper's fine and coarse memory lengths. Any other lm-eval model (`--model hf`) answers only
lm-eval's (loglikelihood, is_greedy) per request, so the task reports a reduced metric instead
(`curve.mode == "reduced"`: per length, `copy_exact`, the share of samples whose copied half is
reproduced exactly under greedy decoding, and `copy_nll`), with no memory lengths. Its headline is
`fc_exact_copy`: the largest tested L at which more than 99% of the samples were copied exactly,
the paper's fine-grained bar applied to whole samples. An exactly copied sample has token accuracy
1, so this never exceeds the fine memory length the same model gets under `--model longmem`.
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


def length_text(length: float, lower_bound: bool) -> str:
    """A memory length as every format writes it: ">4096" when only a lower bound, else "4096"."""
    text = f"{length:.0f}"
    return f">{text}" if lower_bound else text


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
    """Fine and coarse memory lengths; ">L" bounds come from the curve's own flags. A reduced
    curve (`--model hf`) has none: its exact-copy length instead."""
    curve = metrics.get(f"curve,{PREFERRED_FILTER}")
    curve = curve if isinstance(curve, dict) else {}
    if curve.get("mode") == "reduced":
        return exact_copy_length(curve)
    headlines = []
    for position, kind in enumerate(("fine", "coarse")):
        for headline in _summary("forgetting_curve", metrics, f"{kind}_memory_length", f"fc_{kind}", position):
            bound = bool(curve.get(f"{kind}_is_lower_bound", False))
            headlines.append(Headline(headline.column, headline.value, None, bound))
    return headlines


def exact_copy_length(curve: dict) -> list[Headline]:
    """`fc_exact_copy` of a reduced curve: the largest tested L whose exact-copy rate passes the
    fine-grained bar (0 when none does), ">L" when the longest length with numbers still does."""
    from lm_eval_longmem.tasks.forgetting_curve.metrics import FINE_THRESHOLD

    points = [p for p in curve.get("points") or () if isinstance(p, dict) and _is_number(p.get("copy_exact"))]
    if not points:
        return []
    passing = [p["length"] for p in points if p["copy_exact"] > FINE_THRESHOLD]
    length = max(passing, default=0)
    column = Column("fc_exact_copy", "forgetting_curve", (TASK_ORDER.index("forgetting_curve"), 1, 2))
    return [Headline(column, length, None, bool(passing) and length == max(p["length"] for p in points))]


def no_numbers_note(task: str, metrics: dict) -> str:
    """Why a task gave no headline, where the file says more than "no numeric metric": the
    forgetting-curve lengths that ran into a limit (e.g. `cut_by_model`) and gave no numbers."""
    curve = metrics.get(f"curve,{PREFERRED_FILTER}") if isinstance(metrics, dict) else None
    if task != "forgetting_curve" or not isinstance(curve, dict):
        return ""
    failed = [p for p in curve.get("lengths") or () if isinstance(p, dict) and p.get("status", "ok") != "ok"]
    if not failed:
        return ""
    statuses = sorted({str(p.get("status")) for p in failed})
    return f"no tested length gave numbers: {len(failed)} length(s) with status {', '.join(statuses)}"


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
