"""A "did you mean ...?" for a misspelled name: one way of suggesting, for every name a user types
(tasks, subcommands, methods, option values, corpora), so every message reads alike.

A name that differs from a valid one only in case is that one (`YARN` -> `yarn`); otherwise
difflib's close matches. Imports nothing until asked: the start-up hook reaches this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


def close_matches(word: str, choices: Iterable[str], limit: int = 3) -> list[str]:
    """The valid names `word` was most likely meant to be, best first (none when nothing is close)."""
    choices = list(dict.fromkeys(str(c) for c in choices))
    same_but_case = [c for c in choices if c.lower() == str(word).lower()]
    if same_but_case:
        return same_but_case[:limit]
    import difflib

    by_lower = {}
    for choice in choices:
        by_lower.setdefault(choice.lower(), choice)
    return [by_lower[m] for m in difflib.get_close_matches(str(word).lower(), list(by_lower), n=limit)]


def did_you_mean(word: str, choices: Iterable[str], form: str = "{}") -> str:
    """The sentence " Did you mean X?" (or "X, Y or Z?"), each name written as `form` shows it;
    "" when none is close."""
    matches = close_matches(word, choices)
    return f" Did you mean {either(form.format(m) for m in matches)}?" if matches else ""


def either(names: Iterable[str], conjunction: str = "or") -> str:
    """ "a", "a or b", "a, b or c" (or "a, b and c")."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {conjunction} {names[-1]}"
