"""Wrapping a function of another library exactly once: a second install (a re-import, a second
model in one process) must not stack a second wrapper on the first."""

from __future__ import annotations

import functools
from collections.abc import Callable


def wrap_once(owner, name: str, make_wrapper: Callable[[Callable], Callable], marker: str) -> bool:
    """Replace `owner.<name>` by `make_wrapper(original)`, marked with `marker`; False (and
    nothing changed) when the attribute is already a wrapper with that mark."""
    original = getattr(owner, name)
    if getattr(original, marker, False):
        return False
    wrapper = functools.wraps(original)(make_wrapper(original))
    setattr(wrapper, marker, True)
    setattr(owner, name, wrapper)
    return True


def is_wrapped(owner, name: str, marker: str) -> bool:
    """Whether `owner.<name>` is a wrapper made by `wrap_once` with `marker`."""
    return bool(getattr(getattr(owner, name, None), marker, False))
