"""From per-sample accuracies to the curve, fine- and coarse-grained memory lengths.

Fine-grained memory length: the largest tested L whose mean copy accuracy exceeds 99%.
Coarse-grained memory length: the largest tested L where copy beats LM accuracy by more
than 1 point. (The paper's footnote 8 and Table 3; 0 when no length qualifies.) A length
is a lower bound ("> L" in the paper) when the largest length with results still qualifies.

Both are computed on the whole grid, including lengths whose input is past the training
length. A length that gave no numbers (status `model_limit`, `out_of_memory`,
`cut_by_model`) stays in the curve with its status and counts for neither.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass

import numpy as np

from lm_eval_longmem.tasks.summarized_metric import SummarizedMetric

FINE_THRESHOLD = 0.99
COARSE_MARGIN = 0.01


@dataclass(frozen=True)
class LengthSummary:
    length: int
    copy_mean: float
    copy_std: float
    lm_mean: float
    lm_std: float
    num_samples: int


OK = "ok"


def _status(record) -> str:
    return record.get("status", OK)


def _by_length(records):
    """Records with numbers, grouped by length (failed ones are left to `_failures`)."""
    groups = defaultdict(list)
    for record in records:
        if _status(record) == OK:
            groups[int(record["length"])].append(record)
    return dict(sorted(groups.items()))


def _failures(records) -> dict[int, dict]:
    """Per length that failed at least once: the status, how many samples and one detail."""
    failed: dict[int, dict] = {}
    for record in records:
        if _status(record) != OK:
            entry = failed.setdefault(int(record["length"]), {"status": _status(record), "failed_samples": 0})
            entry["failed_samples"] += 1
            if record.get("detail"):
                entry.setdefault("detail", record["detail"])
    return failed


def population_std(values) -> float:
    """np.std (ddof=0), as the paper's reference code reports."""
    return float(np.std(np.asarray(values, dtype=float)))


def summarize(records) -> list[LengthSummary]:
    summaries = []
    for length, group in _by_length(records).items():
        copy = [r["copy"] for r in group]
        lm = [r["lm"] for r in group]
        summaries.append(
            LengthSummary(
                length, float(np.mean(copy)), population_std(copy), float(np.mean(lm)), population_std(lm), len(group)
            )
        )
    return summaries


def fine_memory_length(summaries: list[LengthSummary]) -> int:
    return max((s.length for s in summaries if s.copy_mean > FINE_THRESHOLD), default=0)


def coarse_memory_length(summaries: list[LengthSummary]) -> int:
    return max((s.length for s in summaries if s.copy_mean - s.lm_mean > COARSE_MARGIN), default=0)


class Curve(SummarizedMetric):
    """The whole curve as one metric value; the printed table shows only its summary."""

    def summary(self) -> str:
        failed = self.get_field("failed_lengths") or []
        note = f", {len(failed)} length(s) without numbers" if failed else ""
        return (
            f"{len(self.field('points'))} points ({self.field('mode')}){self._memory_lengths()}{note}; "
            "see the results JSON"
        )

    def _memory_lengths(self) -> str:
        """ ", fine 40, coarse >40": the table's plain numbers do not say which are lower bounds."""
        lengths = []
        for kind in ("fine", "coarse"):
            length = self.get_field(f"{kind}_memory_length")
            if length is not None:
                lengths.append(f"{kind} {'>' if self.get_field(f'{kind}_is_lower_bound') else ''}{length}")
        return "".join(f", {text}" for text in lengths)

    def get_field(self, key, default=None):
        return dict.get(self, key, default)


def _with_plan(points: list[dict], records, plans) -> list[dict]:
    """Every planned length, in order: its numbers (if any), its input size, whether that is
    past the training/context length, and its status (`ok` when it has numbers)."""
    by_length = {int(p["length"]): p for p in points}
    failures = _failures(records)
    lengths = sorted(set(by_length) | set(failures) | {p.length for p in plans or ()})
    plan_of = {p.length: p for p in plans or ()}
    merged = []
    for length in lengths:
        point = dict(by_length.get(length, {"length": length}))
        plan = plan_of.get(length)
        if plan is not None:
            point.update(
                input_tokens=plan.input_tokens,
                beyond_training_length=plan.beyond_training_length,
                beyond_context_length=plan.beyond_context_length,
            )
        if length in failures:
            point.update(failures[length])
            if length in by_length:  # some samples ran, others failed
                point["status"] = "partial:" + failures[length]["status"]
        elif length in by_length:
            point["status"] = OK
        elif plan is not None and not plan.runs:
            point.update(status=plan.status, detail=plan.reason)
        else:
            point["status"] = "no_samples"  # e.g. --limit left it out
        merged.append(point)
    return merged


def accuracy_curve(records, plans=None) -> Curve:
    summaries = summarize(records)
    fine, coarse = fine_memory_length(summaries), coarse_memory_length(summaries)
    largest = summaries[-1].length if summaries else 0
    return Curve(
        mode="accuracy",
        **_points_and_statuses([asdict(s) for s in summaries], records, plans),
        fine_memory_length=fine,
        coarse_memory_length=coarse,
        fine_is_lower_bound=bool(summaries) and fine == largest,
        coarse_is_lower_bound=bool(summaries) and coarse == largest,
    )


def _points_and_statuses(points: list[dict], records, plans) -> dict:
    """`points`: the lengths with numbers (what plots draw), each with its input size and
    status; `lengths`: every planned length with its status, failed ones included;
    `failed_lengths`: those without (complete) numbers."""
    everything = _with_plan(points, records, plans)
    return {
        "points": [p for p in everything if "num_samples" in p],
        "lengths": everything,
        "failed_lengths": [p["length"] for p in everything if p["status"] != OK],
    }


REDUCED_FIELDS = ("copy_exact", "lm_exact", "copy_nll", "lm_nll")


def reduced_curve(records, plans=None) -> Curve:
    points = []
    for length, group in _by_length(records).items():
        point = {"length": length}
        point.update({f: float(np.mean([r[f] for r in group])) for f in REDUCED_FIELDS})
        point["num_samples"] = len(group)
        points.append(point)
    return Curve(
        mode="reduced",
        **_points_and_statuses(points, records, plans),
        fine_memory_length=None,
        coarse_memory_length=None,
        fine_is_lower_bound=False,
        coarse_is_lower_bound=False,
    )


def curve(records, plans=None) -> Curve:
    """The curve over every planned length (`protocol.LengthPlan`s), numbers where there are."""
    records = list(records)
    with_numbers = [r for r in records if _status(r) == OK]
    if with_numbers and "copy" not in with_numbers[0]:
        return reduced_curve(records, plans)
    if not with_numbers and any(_status(r) == "cut_by_model" for r in records):
        return reduced_curve(records, plans)
    return accuracy_curve(records, plans)


def aggregate_fine(records) -> int:
    return fine_memory_length(summarize(records))


def aggregate_coarse(records) -> int:
    return coarse_memory_length(summarize(records))
