"""Classes that register themselves by being defined, and the folder whose modules define them:
how long-memory methods and training approaches are found, so that a new one is one new file.

A base class keeps a dict and calls `register_by_name` from `__init_subclass__`; its package
calls `import_every_module` before listing the dict, so every file of the folder has run.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable


def register_by_name(registry: dict[str, type], cls: type, kind: str, declaration: str) -> None:
    """Add `cls` under the `name` it sets itself; a class without one is an intermediate base and
    is not added. `kind` names the things in messages ("long-memory methods"); `declaration` is
    the class attribute that must hold a dataclass (what the subclass declares: "Args", "Keys")."""
    name = cls.__dict__.get("name")
    if name is None:
        return
    if name in registry and registry[name] is not cls:
        raise ValueError(f"Two {kind} are named {name!r}: {registry[name]} and {cls}")
    if not dataclasses.is_dataclass(getattr(cls, declaration)):
        raise TypeError(f"{cls.__name__}.{declaration} must be a dataclass")
    registry[name] = cls


def import_every_module(package: str, path: Iterable[str], infrastructure: Iterable[str] = ()) -> None:
    """Import each module of the package folder(s) `path` (its `__path__`), except `infrastructure`
    and names starting with "_": the classes they define register as they are imported."""
    skipped = set(infrastructure)
    for module in pkgutil.iter_modules(path):
        if module.name not in skipped and not module.name.startswith("_"):
            importlib.import_module(f"{package}.{module.name}")
