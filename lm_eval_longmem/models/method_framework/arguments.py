"""Parse a method's arguments out of lm-eval's `--model_args`, by the types it declares."""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from lm_eval_longmem.common.typed_values import coerce
from lm_eval_longmem.errors import UsageError

# Every integer argument of a method counts or sizes tokens; past int64 it cannot index a tensor
# (and float(10**400), as a default derived from it, raises OverflowError).
LARGEST_COUNT = 2**63 - 1


class MethodArgumentError(UsageError):
    """An argument of a long-memory method is unknown or has the wrong type."""


@dataclasses.dataclass(frozen=True)
class ArgumentFacts:
    """One argument as a listing shows it: the command line's and the docs' tables read the same."""

    name: str
    type_name: str  # as the dataclass spells it: `float | None`
    default: Any  # REQUIRED when the argument has none
    help: str


REQUIRED = dataclasses.MISSING


def argument_facts(args_cls: type) -> list[ArgumentFacts]:
    """Each argument of a method's `Args` dataclass, in order."""
    hints = typing.get_type_hints(args_cls)
    return [
        ArgumentFacts(f.name, _type_name(hints[f.name]), f.default, f.metadata.get("help", ""))
        for f in dataclasses.fields(args_cls)
    ]


def describe_fields(args_cls: type) -> list[str]:
    """`name: type = default  (help)` for each argument, for error messages and listings."""
    lines = []
    for a in argument_facts(args_cls):
        default = a.default if a.default is not REQUIRED else "<required>"
        lines.append(f"{a.name}: {a.type_name} = {default!r}" + (f"  ({a.help})" if a.help else ""))
    return lines


def field_names(args_cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(args_cls)}


def parse_args(method_name: str, args_cls: type, raw: dict[str, Any]):
    """Build `args_cls` from raw values (already split from the other model args)."""
    hints = typing.get_type_hints(args_cls)
    values = {}
    for name, value in raw.items():
        try:
            values[name] = coerce(value, hints[name])
        except (TypeError, ValueError) as err:
            raise MethodArgumentError(
                f"method={method_name}: argument {name}={value!r} is not a valid {_type_name(hints[name])} ({err})"
            ) from None
        if type(values[name]) is int and abs(values[name]) > LARGEST_COUNT:
            raise MethodArgumentError(
                f"method={method_name}: argument {name}={value!r} is out of range: integer arguments are token "
                f"counts and sizes, at most {LARGEST_COUNT} (what a tensor index holds)"
            )
    try:
        return args_cls(**values)
    except TypeError as err:  # a required argument is missing
        raise MethodArgumentError(
            f"method={method_name}: {err}. Its arguments are:\n  " + "\n  ".join(describe_fields(args_cls))
        ) from None
    except ValueError as err:  # validation in __post_init__
        raise MethodArgumentError(f"method={method_name}: {err}") from None


def _type_name(annotation: Any) -> str:
    """As the dataclass spells it: `float | None`, `int`, `'a' | 'b'`."""
    if annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    return getattr(annotation, "__name__", str(annotation))
