"""Every press of NVIDIA's `kvpress` that `--model_args` can build, read from kvpress itself.

Nothing is listed by hand: the presses are the `BasePress` dataclasses kvpress exports, so a
kvpress release that adds one adds it here. A press is named by its class name without
`Press`, lower-cased, with words split only where a capitalised word follows a lower-case
letter: SnapKVPress -> snapkv, ExpectedAttentionPress -> expected_attention, TOVAPress -> tova,
StreamingLLMPress -> streamingllm.

Its arguments are its dataclass fields of plain types (numbers, flags, text, choices, lists of
numbers), with kvpress's defaults and the first line of its docstring's description. A press
that wraps another (AdaKV, ChunkKV, KeyRerotation, DecodingPress, ...) has one field holding a
press: `inner=NAME` chooses it, and the inner press's own fields become arguments too. Presses
made of several presses (ComposedPress, PrefillDecodingPress) cannot be written as
`key=value` pairs: they are listed with that reason.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

from lm_eval_longmem.errors import LongMemError

EXTRA_HINT = "pip install 'lm-eval-longmem[kvpress]'"
_WORD_START = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")
_NOT_A_PRESS = ("BasePress", "ScorerPress")  # abstract bases: they compress nothing themselves


class KVPressMissingError(LongMemError, ImportError):
    """`method=kvpress` was asked for, but the kvpress package is not installed."""


@dataclass(frozen=True)
class PressArgument:
    """One plain field of a press: what `--model_args` may set."""

    name: str
    annotation: Any  # as our typed values read it (lists become tuples)
    default: Any  # dataclasses.MISSING when the press requires it
    help: str


@dataclass(frozen=True)
class PressSpec:
    """A press as `--model_args` sees it."""

    name: str
    cls: type
    arguments: tuple[PressArgument, ...]
    inner_field: str | None  # the field holding a wrapped press, if any
    inner_required: bool  # False when that field has a default press
    unsupported: str = ""  # why it cannot be built from key=value pairs ("" when it can)
    summary: str = ""


def kvpress_module():
    """The kvpress package, or our one-message error naming the extra to install."""
    try:
        import kvpress
    except ImportError as err:
        raise KVPressMissingError(
            f"method=kvpress needs NVIDIA's kvpress package, which is not installed ({err}). Fix: {EXTRA_HINT} "
            "(it pins transformers below 5.3, so install it in an environment of its own)."
        ) from None
    return kvpress


def press_name(cls: type) -> str:
    stem = cls.__name__[: -len("Press")] if cls.__name__.endswith("Press") else cls.__name__
    return _WORD_START.sub("_", stem).lower()


@functools.cache
def presses() -> dict[str, PressSpec]:
    """name -> PressSpec for every press kvpress exports, sorted by name."""
    kvpress = kvpress_module()
    base = kvpress.BasePress
    found = {}
    for export in kvpress.__all__:
        cls = getattr(kvpress, export, None)
        if not isinstance(cls, type) or not issubclass(cls, base) or export in _NOT_A_PRESS:
            continue
        found[press_name(cls)] = _spec(cls, base)
    return dict(sorted(found.items()))


def _spec(cls: type, base: type) -> PressSpec:
    hints = typing.get_type_hints(cls)
    helps = _docstring_help(cls.__doc__ or "")
    plain, press_fields, unsupported = [], [], ""
    for field in dataclasses.fields(cls):
        if not field.init or field.name.startswith("_"):
            continue
        annotation = hints.get(field.name, Any)
        if _holds_presses(annotation, base):
            press_fields.append(field)
            if _is_a_list(annotation):
                unsupported = "it composes a list of presses, which key=value arguments cannot spell"
            continue
        readable = _plain(annotation)
        if readable is None:
            unsupported = unsupported or f"its field {field.name} ({annotation}) has no key=value form"
            continue
        default = field.default
        if default is dataclasses.MISSING and field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        plain.append(PressArgument(field.name, readable, _plain_value(default), helps.get(field.name, "")))
    if len(press_fields) > 1:
        unsupported = unsupported or "it combines two presses, which key=value arguments cannot spell"
    inner = press_fields[0] if len(press_fields) == 1 else None
    inner_required = (
        inner is not None and inner.default is dataclasses.MISSING and inner.default_factory is dataclasses.MISSING
    )
    return PressSpec(
        name=press_name(cls),
        cls=cls,
        arguments=tuple(plain),
        inner_field=inner.name if inner else None,
        inner_required=inner_required,
        unsupported=unsupported,
        summary=_summary(cls.__doc__ or ""),
    )


def _holds_presses(annotation: Any, base: type) -> bool:
    if isinstance(annotation, type):
        return issubclass(annotation, base)
    return any(_holds_presses(arg, base) for arg in typing.get_args(annotation))


def _is_a_list(annotation: Any) -> bool:
    """`list[...]`, or a union with one (`list[Press] | None`)."""
    return typing.get_origin(annotation) in (list, tuple) or any(_is_a_list(arg) for arg in typing.get_args(annotation))


def _plain(annotation: Any) -> Any:
    """`annotation` as a typed-values annotation (lists as tuples), or None if it has no text form."""
    if annotation in (int, float, bool, str):
        return annotation
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return annotation
    if origin in (list, tuple) and args and all(_plain(a) in (int, float, str) for a in args if a is not Ellipsis):
        return tuple[args[0], ...]
    if origin in (typing.Union, types.UnionType):
        parts = [_plain(a) if a is not type(None) else type(None) for a in args]
        if any(p is None for p in parts):
            return None
        return functools.reduce(lambda a, b: a | b, parts)
    return None


def _plain_value(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _docstring_help(doc: str) -> dict[str, str]:
    """numpydoc "name : type, default=...\\n    description": name -> the description's first sentence."""
    helps, lines = {}, doc.splitlines()
    for i, line in enumerate(lines):
        match = re.match(r"^\s*(\w+)\s*:\s*\S", line)
        if not match or i + 1 >= len(lines) or not lines[i + 1].strip():
            continue
        text = []
        for follow in lines[i + 1 :]:
            if not follow.strip() or re.match(r"^\s*(\w+)\s*:\s*\S", follow):
                break
            text.append(follow.strip())
        sentence = " ".join(text)
        helps.setdefault(match.group(1), re.split(r"(?<!i\.e)(?<!e\.g)\. ", sentence)[0].rstrip("."))
    return helps


def _summary(doc: str) -> str:
    first = next((line.strip() for line in doc.splitlines() if line.strip()), "")
    return first.rstrip(".")
