"""What a recipe key accepts beyond its type: a range for a number, "not empty" for a text or a
list, one of a set of names for a text. Each check is declared beside its key (`key(...,
check=...)` in recipe.py or an approach's `Keys`), so that one generic pass validates every key
before anything loads and `--help` shows the very ranges that pass enforces."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


def _number(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() and abs(bound) < 1e15 else repr(bound)


@dataclass(frozen=True)
class Range:
    """Numbers from `low` to `high` (None: unbounded); an open end excludes its bound."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def allows(self, value: Any) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def __str__(self) -> str:
        if self.low is not None and self.high is not None:
            return (
                f"in {'(' if self.low_open else '['}{_number(self.low)}, "
                f"{_number(self.high)}{')' if self.high_open else ']'}"
            )
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {_number(self.low)}"
        return f"{'<' if self.high_open else '<='} {_number(self.high)}"


@dataclass(frozen=True)
class NotEmpty:
    """A text with a character other than white space, or a list with at least one item (a name, a
    folder or a split of blanks is a mistake: an unset shell variable, or a stray quote)."""

    def allows(self, value: Any) -> bool:
        return bool(value.strip()) if isinstance(value, str) else len(value) > 0

    def __str__(self) -> str:
        return "not empty"


@dataclass(frozen=True)
class OneOf:
    """A text that is one of the names `names()` gives, asked when checked: a registry's names
    (the approaches) are complete only once its folder has been read."""

    names: Callable[[], Iterable[str]]

    def choices(self) -> list[str]:
        return list(self.names())

    def allows(self, value: Any) -> bool:
        return value in self.choices()

    def __str__(self) -> str:
        return f"one of {', '.join(self.choices())}"


POSITIVE = Range(0, low_open=True)
NON_NEGATIVE = Range(0)
AT_LEAST_ONE = Range(1)
FRACTION = Range(0, 1)
BELOW_ONE = Range(0, 1, high_open=True)  # decays, dropout, Adam betas: 1 would freeze or zero what they act on
NOT_EMPTY = NotEmpty()
