"""Task options from `--metadata`: `<prefix><name>=value`, typed by a frozen dataclass.

lm-eval hands every task the same dict (`--metadata` merged with `--model_args`), so each
task reads only its own prefix (`fc_`, `pk_`, ...) and ignores the rest. Values arrive as
Python literals from the CLI (`pk_lengths=[1024,2048]`), JSON, or strings; the dataclass's
annotations say what each must become. An unknown option lists the valid ones.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

import numpy as np


def options_from_metadata(cls: type, metadata: dict[str, Any], prefix: str, error: type[Exception], task: str):
    """Build `cls` from the `prefix`ed keys of `metadata`; calls its `validate()` if it has one."""
    known = {f.name for f in dataclasses.fields(cls)}
    given = {k[len(prefix) :]: v for k, v in metadata.items() if k.startswith(prefix)}
    unknown = sorted(set(given) - known)
    if unknown:
        raise error(
            f"Unknown {task} option(s) {', '.join(prefix + u for u in unknown)}; valid: "
            + ", ".join(prefix + k for k in sorted(known))
        )
    hints = typing.get_type_hints(cls)
    try:
        values = {name: _convert(prefix + name, value, hints[name]) for name, value in given.items()}
    except (TypeError, ValueError) as err:
        raise error(f"{task}: {err}") from None
    options = cls(**values)
    if hasattr(options, "validate"):
        options.validate()
    return options


def int_list(name: str, value: Any) -> tuple[int, ...]:
    """`[1024, 2048]`, `"1024 2048"`, `"[1024,2048]"` or `1024` -> sorted, unique ints."""
    if isinstance(value, str):
        value = value.strip("[]() ").replace(",", " ").replace(";", " ").split()
    if isinstance(value, (int, np.integer)):
        value = [value]
    return tuple(sorted({strict_int(name, v) for v in value}))


def strict_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return int(value)


def _convert(name: str, value: Any, annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        if value is None and len(options) < len(typing.get_args(annotation)):
            return None
        (annotation,) = options
    if typing.get_origin(annotation) is tuple:
        return int_list(name, value)
    if annotation is int:
        return strict_int(name, value)
    if annotation is str:
        return str(value)
    raise TypeError(f"{name}: unsupported option type {annotation!r}")
