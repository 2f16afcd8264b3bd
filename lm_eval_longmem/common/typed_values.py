"""Typed values from strings: how `--model_args` and `--metadata` values become what the
dataclass that receives them declares (int, float, bool, str, Literal, tuples, | None).

lm-eval hands over a mix: `key=value` strings it has already turned into Python literals
(`ast.literal_eval`), plain strings (whatever it could not parse, e.g. `[1024,`), and lists
from YAML. One conversion serves the methods' arguments and the tasks' options, and it is
strict: a value that does not read cleanly as the declared type is refused with the form it
should have, never repaired (a dangling `[1024,` is not taken for `(1024,)`).
"""

from __future__ import annotations

import decimal
import math
import re
import types
import typing
from typing import Any

from lm_eval_longmem.errors import UsageError

NONE_STRINGS = ("", "none", "null")
TRUE_STRINGS = ("true", "1", "yes")
FALSE_STRINGS = ("false", "0", "no")
_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_BRACKETS = {"[": "]", "(": ")"}
EXACT_FLOAT_INTEGERS = 2**53  # every integer up to here is a float exactly
MAX_EXPONENT = 4000  # about Python's limit on the digits of an int read from text (4300)
_FLOAT_OVERFLOW = 2**1024  # the smallest integer float() cannot hold


class MalformedValueError(UsageError):
    """A value does not read as the type its option declares; the message says the form wanted."""


def coerce(value: Any, annotation: Any) -> Any:
    """`value` as `annotation`; MalformedValueError (a ValueError) says what form was expected."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        if type(None) in options and (
            value is None or (isinstance(value, str) and value.strip().lower() in NONE_STRINGS)
        ):
            return None
        reasons = []
        for option in options:
            if option is type(None):
                continue
            try:
                return coerce(value, option)
            except (TypeError, ValueError) as err:
                reasons.append(str(err))
        if len(reasons) == 1:  # `X | None`: X's own reason says more than the list of forms
            raise MalformedValueError(reasons[0] + (", or none" if type(None) in options else ""))
        raise MalformedValueError(f"expected {expected_form(annotation)}")
    if origin is tuple:
        item = next(a for a in typing.get_args(annotation) if a is not Ellipsis)
        try:
            items = as_list(value)
        except MalformedValueError as err:
            raise MalformedValueError(f"{err}; expected {expected_form(annotation)}") from None
        converted = []
        for raw in items:
            try:
                converted.append(coerce(raw, item))
            except (TypeError, ValueError):
                raise MalformedValueError(
                    f"item {raw!r} is not {expected_form(item)}; expected {expected_form(annotation)}"
                ) from None
        return tuple(converted)
    if origin is typing.Literal:
        choices = typing.get_args(annotation)
        if value in choices:
            return value
        raise MalformedValueError(f"expected {expected_form(annotation)}")
    if annotation is bool:
        return _to_bool(value)
    if annotation is int:
        return _to_int(value)
    if annotation is float:
        return _to_float(value)
    if annotation is str:
        if isinstance(value, (list, tuple, dict, set)):
            raise MalformedValueError("expected a single value, not a list")
        return str(value)
    raise TypeError(f"unsupported argument type {annotation!r}")


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in TRUE_STRINGS + FALSE_STRINGS:
        return value.strip().lower() in TRUE_STRINGS
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise MalformedValueError("expected true or false")


def _to_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        # lm-eval reads `1e3` as 1000.0: an exact integer. Past 2**53 a float no longer says which
        # integer was typed (`1e23` is 99999999999999991611392.0): refused, never rounded.
        if abs(value) <= EXACT_FLOAT_INTEGERS:
            return int(value)
        raise MalformedValueError(
            f"expected an integer such as 1024; {value:g} is too large to be read exactly "
            "from a decimal point or an exponent: write all its digits"
        )
    if isinstance(value, str):
        text = value.strip()
        if _INTEGER.fullmatch(text):
            return int(text)
        if _NUMBER.fullmatch(text):  # `1e3`, `1024.0`: read exactly, whatever the size
            exact = _exact_decimal(text)
            if exact is not None and exact == exact.to_integral_value():
                return int(exact)
    raise MalformedValueError("expected an integer such as 1024")


def _exact_decimal(text: str) -> decimal.Decimal | None:
    """`text` (already a well-formed number) as an exact Decimal, None past MAX_EXPONENT (a
    `1e999999999` would take minutes to expand into its digits)."""
    number = decimal.Decimal(text)
    return number if abs(number.adjusted()) <= MAX_EXPONENT else None


def _to_float(value: Any) -> float:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _FLOAT_OVERFLOW:
        raise MalformedValueError("expected a finite number")  # float() would raise OverflowError
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        number = float(value.strip())
    else:
        raise MalformedValueError("expected a number such as 0.5")
    if not math.isfinite(number):
        raise MalformedValueError("expected a finite number")
    return number


def as_list(value: Any) -> list:
    """The items of a list value: [1, 10], (1, 10), "[1, 10]", "1,10", "1 10", or one scalar.

    A string must be well formed: brackets, if any, open and close it and do not nest, and
    no item is empty (`[1024,`, `1,,2`, `[1, 2` and `1]` are refused, not repaired).
    """
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, (set, dict)):
        raise MalformedValueError("a set or mapping is not a list")
    if not isinstance(value, str):
        return [value]
    text = value.strip()
    if text[:1] in _BRACKETS:
        closing = _BRACKETS[text[0]]
        if not text.endswith(closing):
            raise MalformedValueError(f"the {text[0]!r} is never closed")
        text = text[1:-1].strip()
        if not text:
            return []
    if any(c in text for c in "[]()"):
        raise MalformedValueError("unbalanced or nested brackets")
    if not text:
        raise MalformedValueError("an empty value")
    pieces = [piece.strip() for piece in text.split(",")]
    if any(not piece for piece in pieces):
        raise MalformedValueError("an empty item (a stray comma)")
    return [item for piece in pieces for item in piece.split()]


def expected_form(annotation: Any) -> str:
    """Plain words for what a value of `annotation` looks like, for error messages."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        forms = [expected_form(a) for a in options if a is not type(None)]
        return " or ".join(forms + (["none"] if type(None) in options else []))
    if origin is tuple:
        item = next(a for a in typing.get_args(annotation) if a is not Ellipsis)
        sample = {int: "[512,1024]", float: "[0.5,2]", bool: "[true,false]"}.get(item, "[a,b]")
        plural = {int: "integers", float: "numbers", bool: "booleans", str: "words"}.get(item, "values")
        return f"a list of {plural} such as {sample}"
    if origin is typing.Literal:
        return "one of " + ", ".join(str(c) for c in typing.get_args(annotation))
    return {
        int: "an integer such as 1024",
        float: "a number such as 0.5",
        bool: "true or false",
        str: "a text value",
    }.get(annotation, getattr(annotation, "__name__", str(annotation)))


def show_value(value: Any) -> str:
    """A value as the user typed it (strings unquoted), for `name=value` in messages."""
    return value if isinstance(value, str) else repr(value)
