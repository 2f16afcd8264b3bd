"""What a user might type for a typed option, and what it means: the generators and the reference
reading behind the fuzz tests (common/test_typed_values_fuzz.py).

The reference reading is written apart from the parsers under test (typed_values.py), so the two
can disagree. It knows three kinds of input:

* canonical forms (`1024`, `0.5`, `true`, `[512,1024]`, `none` for an optional value): a parser
  must accept them, as exactly that value;
* forms that some reading of the text gives a value (`1e3`, `0x10`, `'quoted'`, `01` for a
  boolean: Python's or lm-eval's reading of it): a parser may accept them, as that value, or refuse;
* everything else (`nan`, `10x`, `[1024,`, `maybe`, a list where one value goes): no value, so a
  parser must refuse it.

A parser that accepts any other value has repaired the input silently.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
import os
import re
import types
import typing
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal

from hypothesis import strategies as st

NONE_WORDS = ("", "none", "null")
TRUE_WORDS = ("true", "yes", "1")
FALSE_WORDS = ("false", "no", "0")
ASCII_INTEGER = re.compile(r"[+-]?[0-9]+")
ASCII_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE]([+-]?[0-9]+))?")
DIGITS = re.compile(r"[+-]?\d+")  # any script's decimal digits (Python's int() reads them)
PLAIN_WORD = re.compile(r"[A-Za-z_./~-][\w./~-]*")
MAX_DIGITS = 4000  # below Python's 4300-digit limit on int(str)
EXACT_FLOAT_INTEGERS = 2**53  # beyond, a float no longer says which integer was typed


@dataclasses.dataclass(frozen=True)
class Reading:
    """What a typed text means for its option's type. `certain`: a canonical form, which a parser
    must accept; otherwise it may also refuse it (but never read another value)."""

    value: Any
    certain: bool = True

    def doubtful(self) -> Reading:
        return Reading(self.value, certain=False)


def read_text(text: str, annotation: Any) -> Reading | None:
    """The reference reading of `text` typed for an option of type `annotation` (None: no value)."""
    quoted = _quoted(text)
    if quoted is not None:  # 'x' or "x": lm-eval's explicit string
        reading = read_text(quoted, annotation)
        return reading.doubtful() if reading else None
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        if text.strip().lower() in NONE_WORDS:
            return Reading(None)
        return read_text(text, _without_none(annotation))
    if origin is tuple:
        return _read_int_list(text)
    if origin is Literal:
        return Reading(text) if text in typing.get_args(annotation) else None
    return {int: _read_int, float: _read_float, bool: _read_bool, str: _read_str}[annotation](text)


def read_value(value: Any, annotation: Any) -> Reading | None:
    """The reference reading of a value that arrives typed (JSON `--metadata`, a sweep file's YAML)."""
    if isinstance(value, str):
        return read_text(value, annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return Reading(None) if value is None else read_value(value, _without_none(annotation))
    if origin is tuple:
        if isinstance(value, (list, tuple)):
            items = [read_value(item, int) if not isinstance(item, str) else _read_int(item) for item in value]
            if any(item is None for item in items):
                return None
            return Reading(tuple(sorted({item.value for item in items})), all(item.certain for item in items))
        scalar = read_value(value, int)
        return Reading((scalar.value,), False) if scalar else None
    if origin is Literal:
        return Reading(value) if value in typing.get_args(annotation) and isinstance(value, str) else None
    if annotation is bool:
        if isinstance(value, bool):
            return Reading(value)
        return Reading(bool(value), False) if type(value) is int and value in (0, 1) else None
    if annotation is int:
        if type(value) is int:
            return Reading(value)
        if type(value) is float and value.is_integer() and abs(value) <= EXACT_FLOAT_INTEGERS:
            return Reading(int(value), False)
        return None
    if annotation is float:
        if type(value) in (int, float):
            number = _finite_float(value)
            return None if number is None else Reading(number)
        return None
    if annotation is str:
        return Reading(os.fspath(value)) if isinstance(value, os.PathLike) else None
    raise TypeError(f"no reference reading for {annotation!r}")


def _without_none(annotation: Any) -> Any:
    return next(a for a in typing.get_args(annotation) if a is not type(None))


def _quoted(text: str) -> str | None:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return None


def _python_literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _finite_float(number: Any) -> float | None:
    try:
        result = float(number)
    except (OverflowError, ValueError, TypeError):
        return None
    return result if math.isfinite(result) else None


def _any_float(text: str) -> bool:
    """Whether float() reads `text` (nan and inf too): lm-eval then hands over a float, not the text."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_int(text: str) -> Reading | None:
    s = text.strip()
    if ASCII_INTEGER.fullmatch(s):
        return Reading(int(s)) if len(s) <= MAX_DIGITS else None
    if ASCII_NUMBER.fullmatch(s):  # 1e3, 1024.0: exact, whatever the size
        decimal = Decimal(s)  # safe here: the text is a plain number
        if decimal.is_zero():
            return Reading(0, False)
        if decimal.adjusted() > MAX_DIGITS:
            return None  # 4000 digits or more: no count, and about what Python reads from text at most
        if decimal.adjusted() > -MAX_DIGITS and Fraction(decimal).denominator == 1:
            return Reading(int(decimal), False)
        # lm-eval types the text with float(), which may round it to an integer (1e-400 -> 0.0):
        # its reading, not ours, so a parser handed that float may take it
        rounded = _finite_float(s)
        return Reading(int(rounded), False) if rounded is not None and rounded.is_integer() else None
    if DIGITS.fullmatch(s) and len(s) <= MAX_DIGITS:
        return Reading(int(s), False)
    literal = _python_literal(s)
    if type(literal) is int and abs(literal) < 10**MAX_DIGITS:
        return Reading(literal, False)
    if type(literal) is float and literal.is_integer() and abs(literal) <= EXACT_FLOAT_INTEGERS:
        return Reading(int(literal), False)
    return None


def _read_float(text: str) -> Reading | None:
    s = text.strip()
    if ASCII_NUMBER.fullmatch(s):
        number = _finite_float(s)
        return None if number is None else Reading(number)
    if DIGITS.fullmatch(s):
        number = _finite_float(int(s)) if len(s) <= MAX_DIGITS else None
        return None if number is None else Reading(number, False)
    literal = _python_literal(s)
    if type(literal) in (int, float):
        number = _finite_float(literal)
        return None if number is None else Reading(number, False)
    number = _finite_float(s)  # Python's float(), as lm-eval types values: underscores, other scripts' digits
    return None if number is None else Reading(number, False)


def _read_bool(text: str) -> Reading | None:
    word = text.strip().lower()
    if word in TRUE_WORDS + FALSE_WORDS:
        return Reading(word in TRUE_WORDS)
    number = _read_int(text)
    return Reading(bool(number.value), False) if number and number.value in (0, 1) else None


def _read_str(text: str) -> Reading | None:
    if not text.strip():
        return None
    typed_by_lm_eval = (
        text.strip().lower() in ("true", "false", "none")
        or _any_float(text)
        or _python_literal(text) is not None
        or text.strip().isnumeric()
    )
    return Reading(text, certain=bool(PLAIN_WORD.fullmatch(text)) and not typed_by_lm_eval)


def _read_int_list(text: str) -> Reading | None:
    s = text.strip()
    body = s
    if s[:1] and s[0] in "[(":
        if s[-1:] == {"[": "]", "(": ")"}[s[0]]:
            body = s[1:-1]
            if not body.strip():
                return Reading(())
        else:
            body = None
    if body is not None and not any(c in body for c in "[](){}"):
        pieces = body.split(",")
        if all(piece.strip() for piece in pieces):
            items = [_read_int(token) for piece in pieces for token in piece.split()]
            if items and all(items):
                return Reading(tuple(sorted({i.value for i in items})), all(i.certain for i in items))
    literal = _python_literal(s)
    if isinstance(literal, (list, tuple)) or (type(literal) is int):
        reading = read_value(literal, tuple[int, ...])
        return reading.doubtful() if reading else None
    return None


# --- generators ----------------------------------------------------------------------------

# Texts that have broken parsers before, or could: each kind of near miss a user may type.
NEAR_MISSES = (
    "",
    " ",
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "1e309",
    "-1e309",
    "1e-400",
    "9" * 40,
    "9" * 400,
    "-1",
    "-0",
    "0",
    "+5",
    "1e3",
    "1e23",
    "1.5",
    "2.0",
    "1024.0",
    "1_000",
    "0x10",
    "0o17",
    "1e-3x",
    "10x",
    "0.5.5",
    "\u0661\u0662\u0663",
    "\uff11\uff12",
    "\u00b2",
    "\u200b1",
    "\u00e9",
    "\U0001f642",
    "True",
    "true",
    "TRUE",
    "yes",
    "Yes",
    "maybe",
    "None",
    "none",
    "null",
    "NULL",
    "[1]",
    "[1.5]",
    "[]",
    "[[1]]",
    "(1,)",
    "{1}",
    "{'a':1}",
    "b'x'",
    "...",
    "1j",
    "'1024'",
    '"hf"',
    "'x",
    "[1024",
    "1024]",
    "Frozen",
    "HF",
    "LOG",
    "Linear",
    "Delta",
    "auto ",
    " auto",
    "1 2",
    "[1 2]",
    "[True]",
    "[1e400]",
    "[-1]",
    "[0 150]",
    "-1e3",
    "1e-3",
    "01",
    "1.0",
)
SCALAR_SHAPES = st.from_regex(r"[+-]?[0-9]{0,6}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,4})?[a-z_]?", fullmatch=True)
LIST_SHAPES = st.from_regex(r"[\[(]?[0-9 .e+-]{0,12}[\])]?", fullmatch=True)
# No commas: they separate key=value pairs (the malformed-string properties put them anywhere).
ARBITRARY_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=","), max_size=10)
WORDS = (
    "auto",
    "pg19",
    "shakespeare",
    "linear",
    "log",
    "tokens",
    "chars",
    "cogcomp",
    "manyshots",
    "skip",
    "truncate",
    "frozen",
    "hf",
    "delta",
    ".",
    "no_such_corpus.txt",
)


@functools.cache  # one strategy object per type: Hypothesis analyses each new one afresh
def canonical_texts(annotation: Any) -> st.SearchStrategy[str]:
    """Texts in the forms a parser must accept (their values may still be out of range)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(st.sampled_from(["none", "None", "null", ""]), canonical_texts(_without_none(annotation)))
    if origin is tuple:
        return st.lists(st.integers(-2, 5000), max_size=5).flatmap(
            lambda items: st.sampled_from(
                [
                    "[" + ",".join(map(str, items)) + "]",
                    "[" + ", ".join(map(str, items)) + "]",
                    " ".join(map(str, items)),
                    "(" + ",".join(map(str, items)) + ")",
                ]
            )
        )
    if origin is Literal:
        return st.sampled_from([str(choice) for choice in typing.get_args(annotation)])
    if annotation is int:
        return st.one_of(st.integers(-3, 5000), st.sampled_from([2**31, 2**53 + 1, 10**30])).map(str)
    if annotation is float:
        return st.one_of(
            st.floats(allow_nan=False, allow_infinity=False).map(repr),
            st.integers(-10, 10**6).map(str),
            st.sampled_from(["0.5", "2.0", "1e3", "1e-3", "1e308", "-0.0"]),
        )
    if annotation is bool:
        return st.sampled_from(["true", "false", "True", "FALSE", "yes", "no", "1", "0"])
    if annotation is str:
        return st.sampled_from(WORDS)
    raise TypeError(f"no texts for {annotation!r}")


@functools.cache
def texts_for(annotation: Any) -> st.SearchStrategy[str]:
    """Valid, near-valid and arbitrary texts for an option of type `annotation`."""
    canonical, near_misses = canonical_texts(annotation), st.sampled_from(NEAR_MISSES)
    return st.one_of(canonical, canonical, near_misses, near_misses, SCALAR_SHAPES, LIST_SHAPES, ARBITRARY_TEXT)


JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(), st.text(max_size=6))
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=5,
)


@functools.cache
def typed_values_for(annotation: Any) -> st.SearchStrategy[Any]:
    """Values as JSON or YAML hands them over: of the right type, near it, or anything."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(st.none(), typed_values_for(_without_none(annotation)))
    if origin is tuple:
        right = st.lists(st.one_of(st.integers(-2, 5000), st.floats(), st.booleans()), max_size=4)
    elif annotation is int:
        right = st.one_of(st.integers(-3, 10**30), st.floats(-1e30, 1e30).map(round).map(float))
    elif annotation is float:
        right = st.one_of(st.floats(), st.integers(-(10**400), 10**400))
    else:
        right = canonical_texts(annotation)
    return st.one_of(right, canonical_texts(annotation), JSON_VALUES)
