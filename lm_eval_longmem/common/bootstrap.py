"""The percentile bootstrap interval of a mean, seeded, over per-sample scores (by-length reports and
the live per-bin metrics of `--model longmem`).

A bin of a by-length report holds few samples of a bounded score (0/1 accuracies, F1 in
[0, 1]); the bootstrap needs no assumption of normality and stays inside the scores' range.
Seeded so the same samples always give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_LEVEL = 0.95
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0


@dataclass(frozen=True)
class BootstrapSettings:
    level: float = DEFAULT_LEVEL
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED

    def describe(self) -> str:
        return f"{self.level:.0%} percentile bootstrap, {self.resamples} resamples, seed {self.seed}"


DEFAULT_SETTINGS = BootstrapSettings()


def bootstrap_interval(values: Sequence[float], settings: BootstrapSettings = DEFAULT_SETTINGS) -> tuple[float, float]:
    """(low, high) of the mean of `values`: the central `level` share of the means of
    `resamples` resamples drawn with replacement. Empty: (nan, nan); all equal: that value."""
    import numpy as np

    array = np.asarray(list(values), dtype=float)
    if array.size == 0:
        return (float("nan"), float("nan"))
    if np.all(array == array[0]):
        return (float(array[0]), float(array[0]))
    rng = np.random.default_rng(settings.seed)
    means = array[rng.integers(0, array.size, size=(settings.resamples, array.size))].mean(axis=1)
    tail = (1 - settings.level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return (float(low), float(high))


def as_number(value: Any) -> float | None:
    """A metric value as a float, or None when it is not one number (a list, a dict, NaN, text)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None
