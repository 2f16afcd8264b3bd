"""Passkey accuracy as one length x depth grid (heatmap-ready), next to the scalar metrics.

Each document contributes a record `{length, depth, correct, unit}`; the grid metric
aggregates them into rows = depths, columns = lengths (the usual passkey heatmap, depth on
the y axis). Cells with no documents (a small `--limit`) are None.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from lm_eval_longmem.tasks.summarized_metric import SummarizedMetric


class Grid(SummarizedMetric):
    """The passkey grid as one metric value; the printed table shows only its summary."""

    def summary(self) -> str:
        return (
            f"{len(self.field('lengths'))} lengths x {len(self.field('depths'))} depths, "
            f"overall {self.field('overall'):.3f}; see the results JSON"
        )


def grid(records) -> Grid:
    records = list(records)
    cells = defaultdict(list)
    for record in records:
        cells[(int(record["length"]), int(record["depth"]))].append(float(record["correct"]))
    lengths = sorted({length for length, _ in cells})
    depths = sorted({depth for _, depth in cells})

    def cell(length, depth, reduce):
        values = cells.get((length, depth))
        return reduce(values) if values else None

    return Grid(
        lengths=lengths,
        depths=depths,
        length_unit=records[0]["unit"] if records else "tokens",
        accuracy=[[cell(L, d, lambda v: float(np.mean(v))) for L in lengths] for d in depths],
        num_samples=[[cell(L, d, len) or 0 for L in lengths] for d in depths],
        overall=float(np.mean([r["correct"] for r in records])) if records else float("nan"),
    )
