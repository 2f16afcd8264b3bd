"""A structured metric value (a curve, a grid) that lm-eval's printed table can show.

lm-eval writes a dict-valued metric to the results JSON in full (json serializes a dict
through the underlying mapping), but its printed table renders dict values through
`dict(value)`, i.e. through `keys()`, and a whole curve or grid would make every column
hundreds of characters wide. A `SummarizedMetric` therefore shows one `summary` entry to
`keys()`/iteration/`str`, while items(), values() and item access give the real data.
Subclasses say what the one-line summary is.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod


class SummarizedMetric(dict, metaclass=ABCMeta):
    @abstractmethod
    def summary(self) -> str:
        """The one-line cell lm-eval's table shows."""

    def field(self, key):
        """The real value under `key` (item access works too, except for 'summary')."""
        return dict.__getitem__(self, key)

    def keys(self):
        return ["summary"]

    def __iter__(self):
        return iter(["summary"])

    def __getitem__(self, key):
        return self.summary() if key == "summary" else dict.__getitem__(self, key)

    def __str__(self) -> str:
        return self.summary()
