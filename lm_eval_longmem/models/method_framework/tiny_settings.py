"""The settings the method matrix tests run a method with, declared beside the method so that a new
method is its file, its test and its page (tests/methods/test_method_matrix.py and
test_family_matrix.py read them from every method class)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TinySettings:
    """Arguments for a 44-token input on a tiny model (context 128; windows and budgets sized to it).

    `acting`: the method really acts there (a cache compresses, a window masks, a factor rescales),
    so its score differs from vanilla's unless `scores_as_vanilla_because` says why it may not.
    `neutral`: the method must change nothing there (factor 1, windows and budgets above 44 tokens),
    so it scores as vanilla on every family; None when no setting does, `never_neutral_because`
    saying why."""

    acting: dict[str, Any] = field(default_factory=dict)
    neutral: dict[str, Any] | None = field(default_factory=dict)
    scores_as_vanilla_because: str = ""
    never_neutral_because: str = ""

    def __post_init__(self):
        if self.neutral is None and not self.never_neutral_because:
            raise ValueError("a method without neutral settings says why in never_neutral_because")
