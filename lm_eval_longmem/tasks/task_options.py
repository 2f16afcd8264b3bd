"""A task's options from lm-eval's `--metadata`, each under the task's own prefix.

`--metadata` (merged with `--model_args`) reaches every task, so each task reads only the keys
that start with its prefix (`fc_`, `pk_`, `trec_`, `topicret_`), rejects unknown ones with the
list of valid ones, and converts values to the types its frozen options dataclass declares.
lm-eval parses `key=[1,10]` with `ast.literal_eval`; strings such as "1 10" or "[1, 10]" and
JSON lists are accepted too, but a malformed value (`[1024,`, `10x`, `maybe` for a boolean) is
refused with the option, the value and the form expected, never repaired. Integer lists
(lengths, depths, shot counts) come back sorted and without repeats, since every task treats
them as a set of buckets. Each options class's
`validate()` checks ranges and choices with `check_range` / `check_choice`, so every such
message names the option, the value given and what is allowed; the start-up check
(preflight.py) runs it before any model loads.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Sequence
from typing import Any, TypeVar

from lm_eval_longmem.common.typed_values import MalformedValueError, coerce, show_value
from lm_eval_longmem.errors import UsageError

T = TypeVar("T")


# Upper bounds a machine can run, so that a slip (fc_points=10**12) is refused before any model
# loads instead of failing in a 7 TiB allocation after it: inputs up to 2^24 tokens (16.8M, well
# past the Infini-attention paper's 1M-token passkey), counts per length (points, samples,
# windows, bins, questions, shots) up to 100,000, seeds within numpy's 32-bit range.
MAX_TOKENS = 2**24
MAX_COUNT = 100_000
MAX_SEED = 2**32 - 1


class TaskOptionError(UsageError):
    """An option is unknown, malformed, or asks for something the model cannot take."""


def parse_task_options(
    cls: type[T], metadata: dict[str, Any] | None, prefix: str, error: type[Exception] = TaskOptionError
) -> T:
    """Build the dataclass `cls` from the `prefix`-ed keys of `metadata`, then its `validate()`."""
    options = cls(**read_task_options(cls, metadata, prefix, error))
    if hasattr(options, "validate"):
        options.validate()
    return options


def read_task_options(
    cls: type, metadata: dict[str, Any] | None, prefix: str, error: type[Exception] = TaskOptionError
) -> dict[str, Any]:
    """The `prefix`-ed keys of `metadata` converted to `cls`'s field types (unknown keys refused)."""
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    given = {k[len(prefix) :]: v for k, v in (metadata or {}).items() if k.startswith(prefix)}
    unknown = sorted(set(given) - known)
    if unknown:
        raise error(
            f"Unknown option(s) {', '.join(prefix + u for u in unknown)}; valid: "
            + ", ".join(prefix + k for k in sorted(known))
        )
    values = {}
    for name, raw in given.items():
        try:
            values[name] = convert(raw, hints[name])
        except (TypeError, ValueError) as err:
            raise error(f"--metadata {prefix}{name}={show_value(raw)} is malformed: {err}.") from None
    return values


def convert(value: Any, annotation: Any) -> Any:
    """`value` as `annotation`; integer lists come back sorted and without repeats.

    A text option (a corpus, a folder, a choice) takes text only: lm-eval has already turned an
    unquoted `007`, `1e3`, `NaN` or `true` into a number or a boolean, and writing that back
    as text would not give what was typed (`7`, `1000.0`, `nan`, `True`)."""
    if _is_text(annotation) and not isinstance(value, str) and not (value is None and annotation is not str):
        if isinstance(value, os.PathLike):  # the Python API may pass a Path
            return os.fspath(value)
        raise MalformedValueError(
            f"expected text, but it was read as {_kind(value)}: quote it ('...') to keep the text as typed"
        )
    converted = coerce(value, annotation)
    if isinstance(converted, tuple) and all(isinstance(v, int) for v in converted):
        return tuple(sorted(set(converted)))
    return converted


def _kind(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    return "a list or mapping" if isinstance(value, (list, tuple, dict, set)) else type(value).__name__


def _is_text(annotation: Any) -> bool:
    """`str` or `str | None`."""
    return annotation is str or (
        typing.get_origin(annotation) in (typing.Union, types.UnionType)
        and set(typing.get_args(annotation)) == {str, type(None)}
    )


def check_local_path(option: str, value: str | None, holds: str) -> None:
    """A local-data option (`bs_data=/no/such/dir`) names a file or folder that exists: a wrong
    command line, found before any model loads rather than after."""
    if value is None:
        return
    import os

    if not os.path.exists(os.path.expanduser(str(value))):
        raise TaskOptionError(f"{option}={value}: no such file or directory; expected {holds}.")


def check_range(
    option: str, value: Any, minimum: int, maximum: int | None = None, error: type[Exception] = TaskOptionError
) -> None:
    """An integer option, or every item of a non-empty integer-list option, lies in [minimum, maximum]."""
    if value is None:
        return
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    if items and min(items) >= minimum and (maximum is None or max(items) <= maximum):
        return
    bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
    wanted = (
        f"a non-empty list of integers, each {bound}" if isinstance(value, (tuple, list)) else f"an integer {bound}"
    )
    raise error(f"--metadata {option}={_compact(value)} is out of range: expected {wanted}.")


def check_choice(option: str, value: str, choices: Sequence[str], error: type[Exception] = TaskOptionError) -> None:
    """`value` is one of `choices`; else the choices and the closest one."""
    if value in choices:
        return
    from lm_eval_longmem.common.suggestions import did_you_mean

    raise error(f"--metadata {option}={value} is not one of {', '.join(choices)}.{did_you_mean(value, choices)}")


def _compact(value: Any) -> str:
    """A value as it is typed on the command line: (0, 150) -> [0,150]."""
    if isinstance(value, (tuple, list)):
        return "[" + ",".join(str(v) for v in value) + "]"
    return show_value(value)
