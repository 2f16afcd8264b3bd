"""How a model is trained, one file per approach; `get_approach` finds one by the recipe's name.

Every module of this folder but the infrastructure defines an `Approach` subclass, which registers
itself by being defined: `available_approaches` imports them all, so an approach is added by
adding its file (and its recipes in training/recipes/), never by editing a list.
"""

from __future__ import annotations

import functools

from lm_eval_longmem.common.named_subclasses import import_every_module
from lm_eval_longmem.common.suggestions import did_you_mean

from ..errors import TrainingError
from .base import Approach, registered_approaches

_INFRASTRUCTURE = {"base"}


def available_approaches() -> dict[str, type[Approach]]:
    """Every approach defined in this folder, by name (imports the approach files once)."""
    import_every_module(__name__, __path__, _INFRASTRUCTURE)
    return dict(sorted(registered_approaches().items()))


def approach_names() -> list[str]:
    """The values the recipe key `approach` accepts."""
    return list(available_approaches())


def approaches_reading(key: str) -> list[str]:
    """The approaches whose own keys include `key` (none for a key every approach shares)."""
    return [name for name, cls in available_approaches().items() if key in cls.key_names()]


def get_approach(name: str) -> Approach:
    """The approach called exactly `name`, the same object at every call (a TrainingError names
    the valid ones, and the closest, otherwise)."""
    approaches = available_approaches()
    if name not in approaches:
        raise TrainingError(
            f"approach={name} is not valid: expected one of {', '.join(approaches)}."
            f"{did_you_mean(str(name), approaches)}"
        )
    return the_instance(approaches[name])


@functools.cache
def the_instance(cls: type[Approach]) -> Approach:
    """One object per approach class: whoever wraps a hook of the approach the loop uses (the
    training benchmark watches `build`) finds it on the object the loop asks for."""
    return cls()


__all__ = ["Approach", "approach_names", "approaches_reading", "available_approaches", "get_approach"]
