"""Confidence intervals the benchmarks report, in one place."""

from __future__ import annotations

import math


def wilson_interval(correct: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a success count (sound at 0/n and n/n, unlike p +- 2se)."""
    if total == 0:
        return (float("nan"), float("nan"))
    p = correct / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return (max(0.0, centre - half), min(1.0, centre + half))
