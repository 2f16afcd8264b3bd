"""Typed values from strings: how `--model_args` and `--metadata` values become what the
dataclass that receives them declares (int, float, bool, str, Literal, tuples, | None).

lm-eval hands over a mix: `key=value` strings it has already turned into Python literals
(`ast.literal_eval`), plain strings, and lists from YAML. One conversion serves the methods'
arguments and the tasks' options.
"""

from __future__ import annotations

import types
import typing
from typing import Any

NONE_STRINGS = ("", "none", "null")


def coerce(value: Any, annotation: Any) -> Any:
    """`value` as `annotation`; ValueError/TypeError say why it cannot be."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        if type(None) in options and (value is None or (isinstance(value, str) and value.strip().lower() in NONE_STRINGS)):
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return coerce(value, option)
            except (TypeError, ValueError) as err:
                errors.append(str(err))
        raise ValueError("; ".join(errors))
    if origin is tuple:
        (item,) = [a for a in typing.get_args(annotation) if a is not Ellipsis][:1]
        return tuple(coerce(v, item) for v in as_list(value))
    if origin is typing.Literal:
        choices = typing.get_args(annotation)
        if value in choices:
            return value
        raise ValueError(f"expected one of {list(choices)}")
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise ValueError("expected true or false")
    if annotation is int:
        if isinstance(value, bool):
            raise ValueError("expected an integer")
        if isinstance(value, float) and not value.is_integer():
            raise ValueError("expected an integer")
        return int(value)
    if annotation is float:
        if isinstance(value, bool):
            raise ValueError("expected a number")
        return float(value)
    if annotation is str:
        return str(value)
    raise TypeError(f"unsupported argument type {annotation!r}")


def as_list(value: Any) -> list:
    """"[1, 10]", "1,10", "1 10", [1, 10] or 1 -> a list of its items."""
    if isinstance(value, str):
        return value.strip("[]() ").replace(",", " ").replace(";", " ").split()
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]
