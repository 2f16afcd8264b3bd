"""The method registry: every module in `models/methods/` is a method. `get_method` finds one by
name; `build_method` parses its arguments."""

from __future__ import annotations

from typing import Any

from lm_eval_longmem.common.named_subclasses import import_every_module
from lm_eval_longmem.errors import UsageError
from lm_eval_longmem.models.method_framework.arguments import (
    MethodArgumentError,
    field_names,
    parse_args,
)
from lm_eval_longmem.models.method_framework.base import LongMemMethod, registered_methods

DEFAULT_METHOD = "vanilla"


class UnknownMethodError(UsageError):
    """`method=` names no long-memory method."""


def available_methods() -> dict[str, type[LongMemMethod]]:
    """Every method defined in `models/methods/`, by name (imports the method files once)."""
    from lm_eval_longmem.models import methods

    import_every_module(methods.__name__, methods.__path__)
    return dict(sorted(registered_methods().items()))


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
            lines.extend(f"      {line}" for line in family_lines(name))
    return "\n".join(lines)


def get_method(name: str) -> type[LongMemMethod]:
    """The method called exactly `name` (names are lower case: `YARN` is refused, `yarn` suggested)."""
    methods = available_methods()
    if not isinstance(name, str) or name not in methods:  # lm-eval may hand over a number, list or mapping
        from lm_eval_longmem.common.suggestions import did_you_mean

        hint = did_you_mean(name, methods, form="method={}") if isinstance(name, str) else ""
        raise UnknownMethodError(
            f"Unknown method={name!r}.{hint} Valid methods: "
            f"{', '.join(methods)} (`lm-eval-longmem methods` lists each with its arguments)."
        )
    return methods[name]


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
    "split_method_args",
]
