"""How a recipe key is declared, by the shared keys (recipe.py) and by each approach (its `Keys`):
a dataclass field whose metadata carries its help, its section in `--help` and the values it
accepts beyond its type, so that one generic pass checks and lists every key alike."""

from __future__ import annotations

import dataclasses
from typing import Any

from .key_checks import NotEmpty, OneOf, Range


def key(default: Any, help: str, section: str, check: Range | NotEmpty | OneOf | None = None) -> Any:
    """A recipe key: a dataclass field with its help text, listing section and the values it
    accepts beyond its type (`check`: a range, "not empty" or a set of names), which `--help`
    shows and loading.py enforces for every key alike."""
    metadata = {"help": help, "section": section, "check": check}
    if isinstance(default, (dict, list)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)
