"""From per-sample accuracies to the curve, fine- and coarse-grained memory lengths.

Fine-grained memory length: the largest tested L whose mean copy accuracy exceeds 99%.
Coarse-grained memory length: the largest tested L where copy beats LM accuracy by more
than 1 point. (The paper's footnote 8 and Table 3; 0 when no length qualifies.) A length
is a lower bound ("> L" in the paper) when the largest tested length still qualifies.
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


def _by_length(records):
    groups = defaultdict(list)
    for record in records:
        groups[int(record["length"])].append(record)
    return dict(sorted(groups.items()))


def population_std(values) -> float:
    """np.std (ddof=0), as the paper's reference code reports."""
    return float(np.std(np.asarray(values, dtype=float)))


def summarize(records) -> list[LengthSummary]:
    summaries = []
    for length, group in _by_length(records).items():
        copy = [r["copy"] for r in group]
        lm = [r["lm"] for r in group]
        summaries.append(
            LengthSummary(length, float(np.mean(copy)), population_std(copy), float(np.mean(lm)), population_std(lm), len(group))
        )
    return summaries


def fine_memory_length(summaries: list[LengthSummary]) -> int:
    return max((s.length for s in summaries if s.copy_mean > FINE_THRESHOLD), default=0)


def coarse_memory_length(summaries: list[LengthSummary]) -> int:
    return max((s.length for s in summaries if s.copy_mean - s.lm_mean > COARSE_MARGIN), default=0)


class Curve(SummarizedMetric):
    """The whole curve as one metric value; the printed table shows only its summary."""

    def summary(self) -> str:
        return f"{len(self.field('points'))} points ({self.field('mode')}); see the results JSON"


def accuracy_curve(records) -> Curve:
    summaries = summarize(records)
    fine, coarse = fine_memory_length(summaries), coarse_memory_length(summaries)
    largest = summaries[-1].length if summaries else 0
    return Curve(
        mode="accuracy",
        points=[asdict(s) for s in summaries],
        fine_memory_length=fine,
        coarse_memory_length=coarse,
        fine_is_lower_bound=bool(summaries) and fine == largest,
        coarse_is_lower_bound=bool(summaries) and coarse == largest,
    )


REDUCED_FIELDS = ("copy_exact", "lm_exact", "copy_nll", "lm_nll")


def reduced_curve(records) -> Curve:
    points = []
    for length, group in _by_length(records).items():
        point = {"length": length}
        point.update({f: float(np.mean([r[f] for r in group])) for f in REDUCED_FIELDS})
        point["num_samples"] = len(group)
        points.append(point)
    return Curve(
        mode="reduced",
        points=points,
        fine_memory_length=None,
        coarse_memory_length=None,
        fine_is_lower_bound=False,
        coarse_is_lower_bound=False,
    )


def curve(records) -> Curve:
    records = list(records)
    if records and "copy" not in records[0]:
        return reduced_curve(records)
    return accuracy_curve(records)


def aggregate_fine(records) -> int:
    return fine_memory_length(summarize(records))


def aggregate_coarse(records) -> int:
    return coarse_memory_length(summarize(records))
