"""The method registry: `table.py` names every method (a file of models/methods/ each); `get_method`
imports the one asked for, `available_methods` all of them (for listings); `build_method` parses
a method's arguments."""

from __future__ import annotations

import functools
import importlib
from typing import Any

from lm_eval_longmem.errors import UsageError
from lm_eval_longmem.models.method_framework.arguments import (
    MethodArgumentError,
    field_names,
    parse_args,
)
from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.method_registry.table import METHODS

DEFAULT_METHOD = "vanilla"


class UnknownMethodError(UsageError):
    """`method=` names no long-memory method."""


def method_names() -> list[str]:
    """Every method's name, in order, without importing any method."""
    return sorted(METHODS)


def available_methods() -> dict[str, type[LongMemMethod]]:
    """Every method class, by name (imports every method file: for listings, not for one method)."""
    return {name: _load(name, METHODS[name]) for name in method_names()}


def method_listing(only: str | None = None) -> str:
    """Each method with its one-line summary and its arguments (type, default, help)."""
    methods = available_methods() if only is None else {only: get_method(only)}
    lines = []
    for name, cls in methods.items():
        lines.append(f"  {name}: {cls.summary}")
        lines.extend(f"      {line}" for line in cls.describe_arguments(detailed=only is not None))
        if only is not None:
            from lm_eval_longmem.models.method_registry.family_support import family_lines

            lines.append("    model families (transformers model_type; docs/model.md#model-families):")
            lines.extend(f"      {line}" for line in family_lines(cls))
    return "\n".join(lines)


def get_method(name: str) -> type[LongMemMethod]:
    """The method called exactly `name` (names are lower case: `YARN` is refused, `yarn` suggested)."""
    if not isinstance(name, str) or name not in METHODS:  # lm-eval may hand over a number, list or mapping
        from lm_eval_longmem.common.suggestions import did_you_mean

        names = method_names()
        hint = did_you_mean(name, names, form="method={}") if isinstance(name, str) else ""
        raise UnknownMethodError(
            f"Unknown method={name!r}.{hint} Valid methods: "
            f"{', '.join(names)} (`lm-eval-longmem methods` lists each with its arguments)."
        )
    return _load(name, METHODS[name])


@functools.cache
def _load(name: str, module: str) -> type[LongMemMethod]:
    """The method class `module` defines for `name`, imported now: the one LongMemMethod subclass
    of that file whose `name` is the file's name."""
    found = [
        cls
        for cls in vars(importlib.import_module(module)).values()
        if isinstance(cls, type)
        and issubclass(cls, LongMemMethod)
        and cls.__module__ == module
        and cls.__dict__.get("name") == name
    ]
    if len(found) != 1:
        raise TypeError(
            f"{module.replace('.', '/')}.py defines {len(found)} LongMemMethod classes named {name!r}: a file of "
            "models/methods/ defines exactly the method it is named after"
        )
    return found[0]


def split_method_args(method_cls: type[LongMemMethod], model_args: dict[str, Any]):
    """(the method's own arguments, everything else) from a dict of model arguments."""
    names = field_names(method_cls.arguments_class(model_args))
    own = {k: v for k, v in model_args.items() if k in names}
    rest = {k: v for k, v in model_args.items() if k not in names}
    return own, rest


def build_method(name: str, raw_args: dict[str, Any]) -> LongMemMethod:
    cls = get_method(name)
    return cls(parse_args(name, cls.arguments_class(raw_args), raw_args))


__all__ = [
    "DEFAULT_METHOD",
    "LongMemMethod",
    "MethodArgumentError",
    "UnknownMethodError",
    "available_methods",
    "build_method",
    "get_method",
    "method_listing",
    "method_names",
    "split_method_args",
]
